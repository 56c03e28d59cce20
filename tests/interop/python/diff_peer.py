"""omniORBpy peer of the differential tests (tests/interop/idl/differential.idl).

The second omniORB the test suite talks to: omniORBpy 4.3 from PyPI, which
the test suite installs in a virtual environment of its own
(armillary-testkit's `omniorbpy`), with the IDL compiled by its omniidl's
Python back end. omniORBpy marshals differently from omniORB's C++ library
in places (GIOP 1.1 fragments: every value of a sequence aligned on its
own), so Armillary is checked against both.

Usage (the stubs directory on PYTHONPATH):
    diff_peer.py serve --ior-file FILE [-ORB...]
        Serves Differential::Echo, writes its IOR to FILE, runs until killed.
    diff_peer.py sequences IOR-FILE N [-ORB...]
        Calls echo_sequences with N elements in every sequence, echo_any
        with N elements of every primitive sequence type, sum_longlongs with
        10000 values, echo_tail, make_samples and make_points.
    diff_peer.py issue25 IOR-FILE [-ORB...]
        The two calls of issue 25 (run at GIOP 1.1, their messages come in
        fragments): sum_longlongs of 0 to 9999 and echo_any of a
        LongLongSeq of 0 to 2999.
The client modes print one line per check ("ok ..." or "FAIL ...") and,
last, "N passed, M failed"; it exits 0 only if nothing failed.
"""

import os
import sys

from omniORB import CORBA
import omniORB

import Differential
import Differential__POA


def wrap(value, bits, signed):
    """`value` as the C++ peer's integer arithmetic leaves it."""
    value &= (1 << bits) - 1
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def make_sequences(n):
    """The values of `make_sequences` in diff_peer.cc and differential.rs,
    but for the unsigned long longs, shifted right by 2 bits: omniORBpy
    4.3.3 cannot unmarshal a sequence<unsigned long long> element of
    2**63 - 1 or more (OverflowError in the upcall, which then also fails
    the next unmarshalling in that process)."""
    idx = range(n)
    return Differential.Sequences(
        lead=7,
        shorts=[wrap(i * 7 - 3000, 16, True) for i in idx],
        ushorts=[wrap(i * 13, 16, False) for i in idx],
        longs=[wrap(wrap(i * 7919, 32, True) - 500000, 32, True) for i in idx],
        ulongs=[wrap(i * 2654435761, 32, False) for i in idx],
        longlongs=[i * 1000000007 - 5000000000 for i in idx],
        ulonglongs=[wrap(i * 11400714819323198485, 64, False) >> 2 for i in idx],
        floats=[i * 0.25 - 100.0 for i in idx],
        doubles=[float(i) * 1.0e-3 - 1.0e6 for i in idx],
        booleans=[i % 3 == 0 for i in idx],
        chars="".join(chr(ord("a") + i % 26) for i in idx),
        octets=bytes(wrap(i * 31 + 7, 8, False) for i in idx),
        strings=[chr(ord("A") + i % 26) * (i % 13) for i in idx],
        points=[Differential.Point(i, -i) for i in idx],
        samples=[make_sample(i) for i in idx],
    )


def make_sample(i):
    return Differential.Sample("sample-%d" % i, i * 0.5, wrap(i, 16, True), wrap(i, 8, False))


# Every primitive sequence type, with the values echo_any carries: element
# sizes 1, 2, 4 and 8, so that fragment boundaries fall inside each.
def primitive_sequences(n):
    s = make_sequences(n)
    return [
        ("ShortSeq", Differential._tc_ShortSeq, s.shorts),
        ("UShortSeq", Differential._tc_UShortSeq, s.ushorts),
        ("LongSeq", Differential._tc_LongSeq, s.longs),
        ("ULongSeq", Differential._tc_ULongSeq, s.ulongs),
        ("LongLongSeq", Differential._tc_LongLongSeq, s.longlongs),
        ("ULongLongSeq", Differential._tc_ULongLongSeq, s.ulonglongs),
        ("FloatSeq", Differential._tc_FloatSeq, s.floats),
        ("DoubleSeq", Differential._tc_DoubleSeq, s.doubles),
        ("BooleanSeq", Differential._tc_BooleanSeq, s.booleans),
        ("CharSeq", Differential._tc_CharSeq, s.chars),
        ("Bytes", Differential._tc_Bytes, s.octets),
    ]


class Echo(Differential__POA.Echo):
    def echo_any(self, v):
        return v

    def encode_any(self, v, big_endian):
        return omniORB.cdrMarshal(CORBA._tc_any, v, 0 if big_endian else 1)

    def echo_tail(self, t):
        return t

    def sum_longlongs(self, v):
        return wrap(sum(v), 64, True)

    def make_points(self, n):
        return [Differential.Point(i, -i) for i in range(max(n, 0))]

    def make_samples(self, n):
        return [make_sample(i) for i in range(max(n, 0))]

    def echo_sequences(self, v):
        return v


def serve(orb, args):
    if len(args) != 2 or args[0] != "--ior-file":
        sys.exit("usage: diff_peer.py serve --ior-file FILE [-ORB...]")
    poa = orb.resolve_initial_references("RootPOA")
    ref = poa.id_to_reference(poa.activate_object(Echo()))
    poa._get_the_POAManager().activate()
    # Written whole, then renamed: the test reads it as soon as it exists.
    tmp = args[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write(orb.object_to_string(ref) + "\n")
    os.rename(tmp, args[1])
    orb.run()


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
            print("ok   " + what, flush=True)
        else:
            self.failed += 1
            print("FAIL " + what, flush=True)

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        sys.exit(0 if self.failed == 0 else 1)

    def run(self, what, call):
        try:
            call()
        except CORBA.SystemException as e:
            self.check(False, "%s: system exception %s" % (what, e))
        except CORBA.Exception as e:
            self.check(False, "%s: exception %s" % (what, e))


def sequences(orb, args):
    if len(args) != 2:
        sys.exit("usage: diff_peer.py sequences IOR-FILE N [-ORB...]")
    e = narrow(orb, args[0])
    n = int(args[1])
    c = Checks()

    def echo_sequences():
        sent = make_sequences(n)
        back = e.echo_sequences(sent)
        c.check(same(back, sent), "echo_sequences")

    def echo_anys():
        for name, tc, values in primitive_sequences(n):
            back = e.echo_any(CORBA.Any(tc, values))
            c.check(back.typecode().equal(tc) and back.value() == values, "echo_any " + name)

    def sum_longlongs():
        v = list(range(10000))
        c.check(e.sum_longlongs(v) == sum(v), "sum_longlongs of 10000")

    def echo_tail():
        back = e.echo_tail(Differential.Tail([], 7))
        c.check(list(back.a) == [] and back.b == 7, "echo_tail with an empty sequence")
        back = e.echo_tail(Differential.Tail([-1, 0, 1 << 40], -9))
        c.check(list(back.a) == [-1, 0, 1 << 40] and back.b == -9, "echo_tail with three values")

    def make_samples():
        got = e.make_samples(1000)
        c.check(all(same(g, make_sample(i)) for i, g in enumerate(got)) and len(got) == 1000,
                "make_samples(1000)")

    def make_points():
        got = e.make_points(1000)
        c.check(len(got) == 1000 and all(p.x == i and p.y == -i for i, p in enumerate(got)),
                "make_points(1000)")

    for what, call in [("echo_sequences", echo_sequences), ("echo_any", echo_anys),
                       ("sum_longlongs", sum_longlongs), ("echo_tail", echo_tail),
                       ("make_samples", make_samples), ("make_points", make_points)]:
        c.run(what, call)
    c.finish()


def issue25(orb, args):
    if len(args) != 1:
        sys.exit("usage: diff_peer.py issue25 IOR-FILE [-ORB...]")
    e = narrow(orb, args[0])
    c = Checks()

    def sum_longlongs():
        c.check(e.sum_longlongs(list(range(10000))) == 49995000, "sum_longlongs of 10000")

    def echo_any():
        values = list(range(3000))
        back = e.echo_any(CORBA.Any(Differential._tc_LongLongSeq, values))
        c.check(back.value() == values, "echo_any LongLongSeq of 3000")

    c.run("sum_longlongs", sum_longlongs)
    c.run("echo_any", echo_any)
    c.finish()


def narrow(orb, ior_file):
    with open(ior_file) as f:
        return orb.string_to_object(f.read().strip())._narrow(Differential.Echo)


def same(a, b):
    """Whether two IDL values are equal member by member."""
    if hasattr(a, "__dict__") and hasattr(b, "__dict__"):
        return vars(a).keys() == vars(b).keys() and all(
            same(getattr(a, k), getattr(b, k)) for k in vars(a))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def main():
    orb = CORBA.ORB_init(sys.argv, CORBA.ORB_ID)
    args = [a for a in sys.argv[1:]]
    mode, rest = (args[0], args[1:]) if args else ("", [])
    if mode == "serve":
        serve(orb, rest)
    elif mode == "sequences":
        sequences(orb, rest)
    elif mode == "issue25":
        issue25(orb, rest)
    else:
        sys.exit("usage: diff_peer.py serve|sequences|issue25 ...")


if __name__ == "__main__":
    main()
