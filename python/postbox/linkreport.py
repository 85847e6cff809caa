"""Seed 003's memory-based-against-TCP/IP tables, redrawn with the links
part's records (linkbench, ``links.jsonl``) beside the seed's values.

Seed 003 is one web page (the SSS-CORE evaluation); its tables are not
numbered there.  They are numbered here in the order the page gives them,
counting the tables of figures and leaving out the "Conditions" tables that
describe the machines: Table 1 the cost of a task id, Table 2 memory
allocation, Table 3 one-way latencies of MBCF/1000BASE-SX beside TCP/IP,
Table 4 their peak bandwidths, Table 5 one-way latencies of MBCF/100BASE-TX,
Table 6 their peak bandwidths, Table 7 round-trip times of MPI with
100BASE-TX, Table 8 peak bandwidths of MPI with 100BASE-TX, then the NAS,
RPC and DSM tables.  Tables 3 to 8 are redrawn.

Which of this machine's figures stands for which of the seed's:

- MBCF's remote write (MBCF_WRITE) is Postbox's RSM put over its tcp
  transport: ``tcp_put_pingpong`` (half a round trip, the seed's one-way
  latency) and ``tcp_put_stream`` (a stream of puts closed by a barrier);
  MBCF_SIGNAL is ``tcp_signal_pingpong`` (size 0 only);
- the seed's TCP/IP is raw TCP between the same two processes
  (``tcp_pingpong`` with TCP_NODELAY, ``tcp_stream``), and raw UDP
  (``udp_pingpong``) beside it;
- MPI/MBCF is Postbox's MPI over its RSM tcp transport, MPICH/TCP is
  MPICH over TCP, both bench/mpi_p2p.c: the round trip is twice
  ``pingpong_standard``'s half round trip, the peak bandwidth
  ``bandwidth_uni`` (windows of MPI_Isend, the seed's half duplex).

Bandwidths are MB/s with MB = 10^6 B (the seed's "Mbyte/sec", whose
gigabit limit it gives as 125).  The seed's gigabit tables (3, 4) get this
machine's links of 1 Gbit/s and faster; its 100BASE-TX tables (5, 6) the
slower ones; the MPI tables (7, 8) every link.
"""

from __future__ import annotations

import html
import statistics
from typing import Iterable, Optional, Sequence

from postbox.plot import format_size, format_value

SUITE = "links"
SEED = "seed 003 (SSS-CORE performance evaluation, one web page)"

# the seed's values: (table, row label, {size: value}); each table's source
# is SEED, the table number as counted in this module's docstring
SEED_TABLES = {
    3: [("MBCF/1000BASE-SX (SSS-CORE, Ultra 60)",
         {4: 9.6, 16: 11.0, 64: 11.5, 256: 16.2, 1024: 35.9}),
        ("TCP/IP/1000BASE-SX (Solaris 2.6, Ultra 60)",
         {4: 95.08, 16: 95.22, 64: 95.39, 256: 99.45, 1024: 114.15})],
    4: [("MBCF/1000BASE-SX (SSS-CORE, Ultra 60)",
         {4: 2.29, 16: 5.67, 64: 22.30, 256: 55.41, 1024: 78.22, 1408: 80.92}),
        ("TCP/IP/1000BASE-SX (Solaris 2.6, Ultra 60)",
         {4: 0.09, 16: 0.43, 64: 1.67, 256: 5.56, 1024: 12.79, 1408: 20.21})],
    5: [("MBCF_WRITE/100BASE-TX (SSS-CORE, SPARCstation 20)",
         {4: 24.5, 16: 27.5, 64: 34, 256: 60.5, 1024: 172}),
        ("MBCF_FIFO/100BASE-TX", {4: 32, 16: 32, 64: 40.5, 256: 73, 1024: 210.5}),
        ("MBCF_SIGNAL/100BASE-TX", {4: 49, 16: 52.5, 64: 60.5, 256: 93, 1024: 227.5})],
    6: [("MBCF_WRITE/100BASE-TX, half duplex",
         {4: 0.31, 16: 1.15, 64: 4.31, 256: 8.56, 1024: 11.13, 1408: 11.48}),
        ("MBCF_WRITE/100BASE-TX, full duplex",
         {4: 0.34, 16: 1.27, 64: 4.82, 256: 9.63, 1024: 11.64, 1408: 11.93})],
    7: [("MPI/MBCF on SSS-CORE (100BASE-TX)",
         {0: 71, 4: 85, 16: 85, 64: 106, 256: 168, 1024: 438, 4096: 1026}),
        ("MPICH 1.1/TCP on SunOS (100BASE-TX)",
         {0: 968, 4: 962, 16: 980, 64: 1020, 256: 1080, 1024: 1255, 4096: 2195})],
    8: [("MPI/MBCF on SSS-CORE, half duplex (100BASE-TX)",
         {4: 0.14, 16: 0.53, 64: 1.82, 256: 4.72, 1024: 8.08, 4096: 9.72, 16384: 10.15,
          65536: 9.78}),
        ("MPI/MBCF on SSS-CORE, full duplex (100BASE-TX)",
         {4: 0.14, 16: 0.57, 64: 1.90, 256: 5.33, 1024: 10.22, 4096: 11.68, 16384: 11.77,
          65536: 11.85}),
        ("MPICH 1.1/TCP on SunOS, half duplex (100BASE-TX)",
         {4: 0.02, 16: 0.09, 64: 0.35, 256: 1.27, 1024: 3.54, 4096: 6.04, 16384: 5.59,
          65536: 7.00})],
}

TITLES = {
    3: "One-way latency, memory-based against TCP/IP, gigabit (us)",
    4: "Peak bandwidth, memory-based against TCP/IP, gigabit (MB/s)",
    5: "One-way latency of memory-based communication, 100 Mbit/s (us)",
    6: "Peak bandwidth of memory-based communication, 100 Mbit/s (MB/s)",
    7: "Round-trip time of MPI, memory-based against TCP (us)",
    8: "Peak bandwidth of MPI, memory-based against TCP (MB/s)",
}

GIGABIT = 10 ** 9
# this machine's rows of each table: (kind, library or None, test, label,
# factor applied to the median)
ROWS = {
    3: [("rsm", "postbox", "tcp_put_pingpong", "Postbox RSM put (tcp)", 1.0),
        ("raw", "raw", "tcp_pingpong", "raw TCP", 1.0),
        ("raw", "raw", "udp_pingpong", "raw UDP", 1.0)],
    4: [("rsm", "postbox", "tcp_put_stream", "Postbox RSM put stream (tcp)", 1.0),
        ("raw", "raw", "tcp_stream", "raw TCP stream", 1.0)],
    7: [("mpi", None, "pingpong_standard", "MPI", 2.0)],
    8: [("mpi", None, "bandwidth_uni", "MPI", 1.0)],
}
ROWS[5] = [("rsm", "postbox", "tcp_put_pingpong", "Postbox RSM put (tcp)", 1.0),
           ("rsm", "postbox", "tcp_signal_pingpong", "Postbox RSM signal (tcp)", 1.0)] + \
    ROWS[3][1:]
ROWS[6] = ROWS[4]


def is_link(record: dict) -> bool:
    """A record of the links part."""
    return record.get("suite") == SUITE


def link_names(records: Iterable[dict]) -> list:
    """The links measured, slowest first."""
    found = {}
    for r in records:
        if is_link(r):
            found[r.get("link")] = r.get("link_rate") or 0
    return sorted(found, key=lambda name: (found[name], str(name)))


def _links_of(table: int, records: Sequence[dict]) -> list:
    """The links table @table shows (see the module's docstring)."""
    rates = {r.get("link"): r.get("link_rate") or 0 for r in records if is_link(r)}
    names = link_names(records)
    if table in (3, 4):
        return [name for name in names if rates[name] >= GIGABIT]
    if table in (5, 6):
        return [name for name in names if rates[name] < GIGABIT]
    return names


def value(records: Iterable[dict], link: str, kind: str, library: Optional[str], test: str,
          size: int) -> Optional[float]:
    """The median of the matching records' medians (None: none)."""
    found = [r.get("median") for r in records
             if is_link(r) and r.get("link") == link and r.get("kind") == kind
             and (library is None or r.get("library") == library) and r.get("test") == test
             and r.get("size") == size and r.get("median") is not None]
    return statistics.median(found) if found else None


def mpi_libraries(records: Iterable[dict]) -> list:
    """The MPI libraries measured, in the order first met."""
    out: list = []
    for r in records:
        if is_link(r) and r.get("kind") == "mpi" and r.get("library") not in out:
            out.append(r.get("library"))
    return out


def rows(table: int, records: Sequence[dict]) -> list:
    """This machine's rows of @table: (label, {size: value})."""
    out = []
    for link in _links_of(table, records):
        for kind, library, test, label, factor in ROWS[table]:
            for lib in ([library] if library is not None else mpi_libraries(records)):
                sizes = sorted({r.get("size") for r in records
                                if is_link(r) and r.get("link") == link
                                and r.get("kind") == kind and r.get("library") == lib
                                and r.get("test") == test})
                cells = {}
                for size in sizes:
                    found = value(records, link, kind, lib, test, size)
                    if found is not None:
                        cells[size] = found * factor
                if cells:
                    name = label if library is not None else "%s %s" % (lib, label)
                    out.append(("%s, link %s" % (name, link), cells))
    return out


def _cell(number: Optional[float]) -> str:
    return "<td>%s</td>" % ("-" if number is None else html.escape(format_value(number)))


def table_html(table: int, records: Sequence[dict], skipped: Sequence[tuple] = ()) -> list:
    """Seed 003 Table @table with the seed's rows and this machine's."""
    esc = html.escape
    seed_rows = SEED_TABLES[table]
    ours = rows(table, records)
    sizes = sorted({size for _, cells in seed_rows for size in cells} |
                   {size for _, cells in ours for size in cells})
    out = ['<h3 id="seed003-table-%d">Seed 003 Table %d: %s</h3>' % (table, table,
                                                                    esc(TITLES[table])),
           '<div class="wide"><table class="links"><tr><th class="text">row</th>%s</tr>'
           % "".join("<th>%s</th>" % esc(format_size(size)) for size in sizes)]
    for label, cells in seed_rows:
        out.append('<tr class="seed"><td class="text">seed: %s</td>%s</tr>'
                   % (esc(label), "".join(_cell(cells.get(size)) for size in sizes)))
    for label, cells in ours:
        out.append('<tr><td class="text">%s</td>%s</tr>'
                   % (esc(label), "".join(_cell(cells.get(size)) for size in sizes)))
    if table in (7, 8):
        for label, why in skipped:
            out.append('<tr><td class="text">%s: not measured</td><td class="text" '
                       'colspan="%d">%s</td></tr>' % (esc(label), len(sizes), esc(why)))
    if not ours:
        out.append('<tr><td class="text" colspan="%d">no link of this speed was measured in '
                   'this run</td></tr>' % (len(sizes) + 1))
    out.append("</table></div>")
    return out


def section(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The page's "Emulated links" section; empty without links records."""
    found = [r for r in records if is_link(r)]
    if not found:
        return []
    esc = html.escape
    info = (description or {}).get("links") or {}
    skipped = [(entry.get("label"), entry.get("why")) for entry in info.get("skipped") or ()]
    delays = sorted({r.get("link_delay_us") or 0 for r in found})
    out = ["<h2>Emulated links (seed 003)</h2>",
           "<p>Memory-based communication against TCP/IP on links emulated with "
           "<code>postbox run --netns --link</code> (the kernel's traffic control on the "
           "veth pairs between two virtual nodes, docs/launch.md): links %s. Postbox's RSM "
           "put and raw TCP and UDP are postbox-rsm-net-bench, the MPI rows bench/mpi_p2p.c "
           "(<code>links.jsonl</code>). Medians; this machine's rows name the link; the "
           "seed's are %s, beside them. One machine's CPUs still do all the work, so the "
           "software's own time per message is this machine's, not the emulated "
           "cluster's.</p>" % (esc(", ".join(link_names(found))), esc(SEED))]
    if delays == [0]:
        out.append("<p>The links have no added delay%s.</p>"
                   % (": %s" % esc(info["no_delay"]) if info.get("no_delay") else ""))
    for table in sorted(SEED_TABLES):
        out += table_html(table, found, skipped)
    return out
