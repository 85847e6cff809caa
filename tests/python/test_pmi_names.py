"""The launcher's name service (MPI_Publish_name, _Unpublish_name, _Lookup_name)
over PMI-1 and PMI-2, and its table shared between the servers of two jobs."""

from postbox import pmi_server


def make_server(job_id="job-n", size=2, names=None):
    sent = []
    server = pmi_server.PmiServer(job_id, size, 1, send=lambda r, d: sent.append((r, d)),
                                  abort=lambda *a: None, close=lambda r, why: None, names=names)
    return server, sent


def ask_v1(server, sent, rank, line):
    sent.clear()
    server.feed(rank, line + b"\n")
    assert len(sent) == 1 and sent[0][0] == rank
    return pmi_server.parse_v1(sent[0][1].rstrip(b"\n"))


def ask_v2(server, sent, rank, body):
    sent.clear()
    server.feed(rank, b"%6d" % len(body) + body)
    assert len(sent) == 1 and sent[0][0] == rank
    return pmi_server.parse_v2(sent[0][1][6:])


def test_publish_lookup_unpublish_v1():
    server, sent = make_server()
    assert ask_v1(server, sent, 0, b"cmd=publish_name service=my\\ svc port=p:0:1") == \
        ("publish_result", {"rc": "0"})
    assert ask_v1(server, sent, 1, b"cmd=lookup_name service=my\\ svc") == \
        ("lookup_result", {"rc": "0", "port": "p:0:1"})
    cmd, fields = ask_v1(server, sent, 1, b"cmd=publish_name service=my\\ svc port=other")
    assert cmd == "publish_result" and fields["rc"] == "-1" and "already" in fields["msg"]
    assert ask_v1(server, sent, 1, b"cmd=unpublish_name service=my\\ svc") == \
        ("unpublish_result", {"rc": "0"})
    cmd, fields = ask_v1(server, sent, 0, b"cmd=lookup_name service=my\\ svc")
    assert cmd == "lookup_result" and fields["rc"] == "-1" and "not_found" in fields["msg"]
    cmd, fields = ask_v1(server, sent, 0, b"cmd=unpublish_name service=my\\ svc")
    assert cmd == "unpublish_result" and fields["rc"] == "-1" and "not_published" in fields["msg"]


def test_bad_requests_v1():
    server, sent = make_server()
    for line, reply, why in ((b"cmd=publish_name port=x", "publish_result", "missing_service"),
                             (b"cmd=publish_name service=a", "publish_result", "missing_port"),
                             (b"cmd=lookup_name", "lookup_result", "missing_service"),
                             (b"cmd=publish_name service=" + b"s" * 1100 + b" port=x",
                              "publish_result", "service_longer_than_1024")):
        cmd, fields = ask_v1(server, sent, 0, line)
        assert cmd == reply and fields["rc"] == "-1" and fields["msg"] == why
    assert server.names.names == {}


def test_publish_lookup_unpublish_v2():
    server, sent = make_server()
    server.feed(0, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    server.feed(1, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    assert ask_v2(server, sent, 0, b"cmd=name-publish;name=svc-a;port=q;thrid=7;") == \
        ("name-publish-response", {"rc": "0", "thrid": "7"})
    assert ask_v2(server, sent, 1, b"cmd=name-lookup;name=svc-a;") == \
        ("name-lookup-response", {"rc": "0", "found": "TRUE", "port": "q"})
    assert ask_v2(server, sent, 1, b"cmd=name-unpublish;name=svc-a;") == \
        ("name-unpublish-response", {"rc": "0"})
    cmd, fields = ask_v2(server, sent, 1, b"cmd=name-lookup;name=svc-a;")
    assert cmd == "name-lookup-response" and fields["rc"] == "-1" and fields["found"] == "FALSE"


def test_v2_semicolons_are_doubled_both_ways():
    # ";;" is a literal ";" in a PMI-2 value, as src/boot/pmi.c writes and reads it
    server, sent = make_server()
    server.feed(0, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    server.feed(1, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    assert ask_v2(server, sent, 0, b"cmd=name-publish;name=a;;b;port=p;;q;") == \
        ("name-publish-response", {"rc": "0"})
    sent.clear()
    server.feed(1, b"%6d" % len(b"cmd=name-lookup;name=a;;b;") + b"cmd=name-lookup;name=a;;b;")
    assert b"port=p;;q;" in sent[0][1]
    assert pmi_server.parse_v2(sent[0][1][6:])[1]["port"] == "p;q"


def test_names_shared_between_jobs_and_limited_per_rank():
    names = pmi_server.NameService()
    one, sent_one = make_server("job-1", names=names)
    two, sent_two = make_server("job-2", names=names)
    assert ask_v1(one, sent_one, 0, b"cmd=publish_name service=s port=p")[1]["rc"] == "0"
    assert ask_v1(two, sent_two, 1, b"cmd=lookup_name service=s")[1] == {"rc": "0", "port": "p"}
    for i in range(1, pmi_server.NAMES_PER_RANK):
        assert ask_v1(one, sent_one, 0, b"cmd=publish_name service=s%d port=p" % i)[1]["rc"] == "0"
    fields = ask_v1(one, sent_one, 0, b"cmd=publish_name service=over port=p")[1]
    assert fields["rc"] == "-1" and fields["msg"].startswith("more_than_")
    # rank 0 of the other job is another publisher
    assert ask_v1(two, sent_two, 0, b"cmd=publish_name service=over port=p")[1]["rc"] == "0"
