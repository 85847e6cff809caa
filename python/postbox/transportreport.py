"""The report's section of part ``transports`` (transportbench): Postbox's
MPI 8-byte ping-pong and 4 MB bandwidth between two virtual nodes over each
RSM transport, the median of the rounds' medians, with ofi against tcp."""

from __future__ import annotations

import html
import statistics
from typing import Optional, Sequence

from postbox.transportbench import SUITE

FIGURES = (("pingpong_standard", 8, "8 B ping-pong, half round trip (us)", "latency"),
           ("bandwidth_uni", 4194304, "4 MB bandwidth (MB/s)", "bandwidth"))


def is_transport(record: dict) -> bool:
    return record.get("suite") == SUITE


def medians(records: Sequence[dict]) -> dict:
    """{(transport, test, size): (median of the rounds' medians, rounds)}."""
    found: dict = {}
    for record in records:
        if not is_transport(record) or not isinstance(record.get("median"), (int, float)):
            continue
        key = (record.get("transport"), record.get("test"), record.get("size"))
        found.setdefault(key, []).append(float(record["median"]))
    return {key: (statistics.median(values), len(values)) for key, values in found.items()}


def _cell(value: Optional[tuple]) -> str:
    if value is None:
        return "<td>-</td>"
    return '<td title="%d rounds">%.4g</td>' % (value[1], value[0])


def section(records: Sequence[dict]) -> list:
    table = medians(records)
    if not table:
        return []
    transports = sorted({key[0] for key in table}, key=lambda t: (t != "tcp", str(t)))
    esc = html.escape
    out = ['<h3 id="transports">Postbox MPI between two virtual nodes, by RSM transport</h3>',
           "<p>bench/mpi_p2p.c under <code>postbox run -n 2 --nodes 2</code> with "
           "<code>POSTBOX_TRANSPORT</code> set to each transport (ofi: libfabric's "
           "<code>tcp;ofi_rxm</code> provider), the transports interleaved over rounds; the "
           "median of the rounds' medians (hover a value for the number of rounds).</p>",
           '<table class="transports"><tr><th class="text">figure</th>%s%s</tr>'
           % ("".join("<th>%s</th>" % esc(str(t)) for t in transports),
              "<th>ofi / tcp</th>" if {"ofi", "tcp"} <= set(transports) else "")]
    for test, size, label, _ in FIGURES:
        cells = [table.get((t, test, size)) for t in transports]
        ratio = ""
        if {"ofi", "tcp"} <= set(transports):
            ofi, tcp = table.get(("ofi", test, size)), table.get(("tcp", test, size))
            ratio = "<td>%.3g</td>" % (ofi[0] / tcp[0]) if ofi and tcp and tcp[0] else "<td>-</td>"
        out.append('<tr><td class="text">%s</td>%s%s</tr>'
                   % (esc(label), "".join(_cell(c) for c in cells), ratio))
    out.append("</table>")
    return out
