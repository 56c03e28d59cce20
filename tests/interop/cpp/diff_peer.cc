// omniORB peer of the differential tests (tests/interop/idl/differential.idl).
// Usage:
//   diff_peer serve --ior-file FILE [-ORB...]
//       Serves Differential::Echo, writes its IOR to FILE, runs until killed.
//   diff_peer anys IOR-FILE ANYS-FILE [-ORB...]
//       ANYS-FILE holds one CDR encapsulation of an any per line, in hex.
//       Each is decoded with omniORB's own unmarshalling and sent to the
//       object's echo_any and encode_any (both byte orders); what comes
//       back must hold the same value (DynAny::equal, else a "recheck"
//       line for the caller), and omniORB's own encodings of the value are
//       printed ("omniorb INDEX LITTLE BIG") for the caller to compare.
//   diff_peer sequences IOR-FILE N [-ORB...]
//       Calls echo_sequences with N elements in every sequence,
//       sum_longlongs with 10000 values, echo_tail, make_samples and
//       make_points.
// The client modes print one line per check ("ok ..." or "FAIL ...") and,
// last, "N passed, M failed"; they exit 0 only if nothing failed.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include <omniORB4/CORBA.h>
#include "differential.hh"

static int passed = 0, failed = 0;

static void check(bool ok, const std::string& what) {
  if (ok) {
    passed++;
    std::cout << "ok   " << what << std::endl;
  } else {
    failed++;
    std::cout << "FAIL " << what << std::endl;
  }
}

static std::string to_hex(const void* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) {
    out += digits[b[i] >> 4];
    out += digits[b[i] & 15];
  }
  return out;
}

static bool from_hex(const std::string& s, std::vector<CORBA::Octet>& out) {
  if (s.size() % 2) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    unsigned v;
    if (std::sscanf(s.c_str() + i, "%2x", &v) != 1) return false;
    out.push_back((CORBA::Octet)v);
  }
  return true;
}

// omniORB's CDR encapsulation of an any: the byte-order octet, then the
// TypeCode and the value, in the byte order asked for. The stream starts
// zeroed, so alignment gaps are zeros.
static std::string encapsulate(const CORBA::Any& a, bool big_endian) {
  cdrMemoryStream s((CORBA::ULong)0, 1);
  s.setByteSwapFlag(!big_endian);
  CORBA::Octet flag = big_endian ? 0 : 1;
  s.marshalOctet(flag);
  a >>= s;
  return std::string((const char*)s.bufPtr(), s.bufSize());
}

static Differential::Bytes* to_bytes(const std::string& s) {
  Differential::Bytes* b = new Differential::Bytes;
  b->length((CORBA::ULong)s.size());
  if (!s.empty()) std::memcpy(b->get_buffer(), s.data(), s.size());
  return b;
}

// Whether two values of a generated type marshal to the same bytes.
template <class T>
static bool same_cdr(const T& a, const T& b) {
  cdrMemoryStream x((CORBA::ULong)0, 1), y((CORBA::ULong)0, 1);
  a >>= x;
  b >>= y;
  return x.bufSize() == y.bufSize() && std::memcmp(x.bufPtr(), y.bufPtr(), x.bufSize()) == 0;
}

class Echo_i : public POA_Differential::Echo {
 public:
  CORBA::Any* echo_any(const CORBA::Any& v) { return new CORBA::Any(v); }
  Differential::Bytes* encode_any(const CORBA::Any& v, CORBA::Boolean big_endian) {
    return to_bytes(encapsulate(v, big_endian));
  }
  Differential::Tail* echo_tail(const Differential::Tail& t) { return new Differential::Tail(t); }
  CORBA::LongLong sum_longlongs(const Differential::LongLongSeq& v) {
    CORBA::ULongLong sum = 0;
    for (CORBA::ULong i = 0; i < v.length(); i++) sum += (CORBA::ULongLong)v[i];
    return (CORBA::LongLong)sum;
  }
  Differential::PointSeq* make_points(CORBA::Long n) {
    Differential::PointSeq* p = new Differential::PointSeq;
    p->length(n < 0 ? 0 : n);
    for (CORBA::Long i = 0; i < n; i++) {
      (*p)[i].x = i;
      (*p)[i].y = -i;
    }
    return p;
  }
  Differential::SampleSeq* make_samples(CORBA::Long n) {
    Differential::SampleSeq* s = new Differential::SampleSeq;
    s->length(n < 0 ? 0 : n);
    for (CORBA::Long i = 0; i < n; i++) {
      std::ostringstream name;
      name << "sample-" << i;
      (*s)[i].name = CORBA::string_dup(name.str().c_str());
      (*s)[i].value = i * 0.5;
      (*s)[i].tag = (CORBA::Short)i;
      (*s)[i].flag = (CORBA::Octet)i;
    }
    return s;
  }
  Differential::Sequences* echo_sequences(const Differential::Sequences& v) {
    return new Differential::Sequences(v);
  }
};

static Differential::Echo_ptr resolve(CORBA::ORB_ptr orb, const char* file) {
  std::ifstream in(file);
  std::string ior;
  std::getline(in, ior);
  CORBA::Object_var obj = orb->string_to_object(ior.c_str());
  return Differential::Echo::_narrow(obj);
}

// Whether two anys hold equal values, as omniORB's DynAny sees them.
static bool same_value(DynamicAny::DynAnyFactory_ptr factory, const CORBA::Any& a,
                       const CORBA::Any& b) {
  DynamicAny::DynAny_var x = factory->create_dyn_any(a);
  DynamicAny::DynAny_var y = factory->create_dyn_any(b);
  bool same = x->equal(y);
  x->destroy();
  y->destroy();
  return same;
}

// Checks that `got` holds the value `expected` holds. omniORB's
// DynAny::equal compares wide characters as they were encoded (with or
// without a byte order mark), so when it says no, the check is left to the
// other side: a "recheck LABEL HEX" line carries omniORB's encoding of
// `got`, which the test decodes and compares with the value it sent.
static void check_value(DynamicAny::DynAnyFactory_ptr factory, const CORBA::Any& expected,
                        const CORBA::Any& got, const std::string& label) {
  if (!got.type()->equal(expected.type())) {
    check(false, label + ": different TypeCode");
  } else if (same_value(factory, expected, got)) {
    check(true, label);
  } else {
    std::string x = encapsulate(got, false);
    std::cout << "recheck " << label << " " << to_hex(x.data(), x.size()) << std::endl;
    passed++;
  }
}

// Decodes a CDR encapsulation of an any with omniORB's unmarshalling.
static void decapsulate(const CORBA::Octet* bytes, CORBA::ULong len, CORBA::Any& a) {
  cdrEncapsulationStream s(bytes, len);
  a <<= s;
  if (s.checkInputOverrun(1, 1)) throw CORBA::MARSHAL(0, CORBA::COMPLETED_NO);
}

static int run_anys(CORBA::ORB_ptr orb, Differential::Echo_ptr e, const char* file) {
  CORBA::Object_var fobj = orb->resolve_initial_references("DynAnyFactory");
  DynamicAny::DynAnyFactory_var factory = DynamicAny::DynAnyFactory::_narrow(fobj);
  std::ifstream in(file);
  std::string line;
  int index = 0;
  while (std::getline(in, line)) {
    std::ostringstream what;
    what << "any " << index++;
    std::vector<CORBA::Octet> bytes;
    if (line.empty() || !from_hex(line, bytes)) {
      check(false, what.str() + ": not hex");
      continue;
    }
    try {
      CORBA::Any a;
      decapsulate(&bytes[0], (CORBA::ULong)bytes.size(), a);
      std::string little = encapsulate(a, false), big = encapsulate(a, true);
      CORBA::Any_var back = e->echo_any(a);
      check_value(factory, a, back.in(), what.str() + " echo_any");
      for (int b = 0; b < 2; b++) {
        Differential::Bytes_var theirs = e->encode_any(a, b == 1);
        CORBA::Any t;
        decapsulate(theirs->get_buffer(), theirs->length(), t);
        bool order_ok = theirs->length() > 0 && theirs[0] == (b ? 0 : 1);
        std::string label = what.str() + (b ? " encode_any big-endian" : " encode_any little-endian");
        if (!order_ok)
          check(false, label + ": wrong byte order flag");
        else
          check_value(factory, a, t, label);
      }
      // omniORB's own encodings, for the other side to compare bytes.
      std::cout << "omniorb " << (index - 1) << " " << to_hex(little.data(), little.size()) << " "
                << to_hex(big.data(), big.size()) << std::endl;
    } catch (CORBA::SystemException& ex) {
      std::ostringstream minor;
      minor << std::hex << ex.minor();
      check(false, what.str() + ": system exception " + ex._name() + " minor 0x" + minor.str());
    } catch (CORBA::Exception& ex) {
      check(false, what.str() + ": exception " + ex._name());
    }
  }
  return 0;
}

static Differential::Sequences* make_sequences(CORBA::ULong n) {
  Differential::Sequences* s = new Differential::Sequences;
  s->lead = 7;
  s->shorts.length(n);
  s->ushorts.length(n);
  s->longs.length(n);
  s->ulongs.length(n);
  s->longlongs.length(n);
  s->ulonglongs.length(n);
  s->floats.length(n);
  s->doubles.length(n);
  s->booleans.length(n);
  s->chars.length(n);
  s->octets.length(n);
  s->strings.length(n);
  s->points.length(n);
  s->samples.length(n);
  for (CORBA::ULong i = 0; i < n; i++) {
    s->shorts[i] = (CORBA::Short)(i * 7 - 3000);
    s->ushorts[i] = (CORBA::UShort)(i * 13);
    s->longs[i] = (CORBA::Long)(i * 7919) - 500000;
    s->ulongs[i] = i * 2654435761U;
    s->longlongs[i] = (CORBA::LongLong)i * 1000000007LL - 5000000000LL;
    s->ulonglongs[i] = (CORBA::ULongLong)i * 11400714819323198485ULL;
    s->floats[i] = (CORBA::Float)i * 0.25f - 100.0f;
    s->doubles[i] = (CORBA::Double)i * 1.0e-3 - 1.0e6;
    s->booleans[i] = (i % 3) == 0;
    s->chars[i] = (CORBA::Char)('a' + i % 26);
    s->octets[i] = (CORBA::Octet)(i * 31 + 7);
    std::string text(i % 13, (char)('A' + i % 26));
    s->strings[i] = CORBA::string_dup(text.c_str());
    s->points[i].x = (CORBA::Long)i;
    s->points[i].y = -(CORBA::Long)i;
    std::ostringstream name;
    name << "sample-" << i;
    s->samples[i].name = CORBA::string_dup(name.str().c_str());
    s->samples[i].value = i * 0.5;
    s->samples[i].tag = (CORBA::Short)i;
    s->samples[i].flag = (CORBA::Octet)i;
  }
  return s;
}

static int run_sequences(Differential::Echo_ptr e, CORBA::ULong n) {
#define TRY(what, ...)                                                            \
  try {                                                                           \
    __VA_ARGS__;                                                                  \
  } catch (CORBA::SystemException & ex) {                                         \
    check(false, std::string(what) + ": system exception " + ex._name());        \
  } catch (CORBA::Exception & ex) {                                               \
    check(false, std::string(what) + ": exception " + ex._name());               \
  }
  TRY("echo_sequences", {
    Differential::Sequences_var s = make_sequences(n);
    Differential::Sequences_var back = e->echo_sequences(s.in());
    check(same_cdr(s.in(), back.in()), "echo_sequences");
  });
  TRY("sum_longlongs", {
    Differential::LongLongSeq v;
    v.length(10000);
    CORBA::ULongLong sum = 0;
    for (CORBA::ULong i = 0; i < 10000; i++) {
      v[i] = (CORBA::LongLong)i * 1000003LL - 7;
      sum += (CORBA::ULongLong)v[i];
    }
    check(e->sum_longlongs(v) == (CORBA::LongLong)sum, "sum_longlongs of 10000");
  });
  TRY("echo_tail empty", {
    Differential::Tail t;
    t.b = 7;
    Differential::Tail_var back = e->echo_tail(t);
    check(back->a.length() == 0 && back->b == 7, "echo_tail with an empty sequence");
  });
  TRY("echo_tail", {
    Differential::Tail t;
    t.a.length(3);
    t.a[0] = -1;
    t.a[1] = 0;
    t.a[2] = 1LL << 40;
    t.b = -9;
    Differential::Tail_var back = e->echo_tail(t);
    check(same_cdr(t, back.in()), "echo_tail with three values");
  });
  TRY("make_samples", {
    Differential::SampleSeq_var s = e->make_samples(1000);
    bool ok = s->length() == 1000;
    for (CORBA::ULong i = 0; ok && i < 1000; i++) {
      std::ostringstream name;
      name << "sample-" << i;
      ok = name.str() == (const char*)s[i].name && s[i].value == i * 0.5 &&
           s[i].tag == (CORBA::Short)i && s[i].flag == (CORBA::Octet)i;
    }
    check(ok, "make_samples(1000)");
  });
  TRY("make_points", {
    Differential::PointSeq_var p = e->make_points(1000);
    bool ok = p->length() == 1000;
    for (CORBA::ULong i = 0; ok && i < 1000; i++) ok = p[i].x == (CORBA::Long)i && p[i].y == -(CORBA::Long)i;
    check(ok, "make_points(1000)");
  });
  return 0;
}

int main(int argc, char** argv) {
  try {
    CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "serve") {
      const char* ior_file = 0;
      for (int i = 2; i < argc; i++) {
        if (std::strcmp(argv[i], "--ior-file") == 0 && i + 1 < argc) ior_file = argv[++i];
      }
      if (!ior_file) {
        std::cerr << "usage: diff_peer serve --ior-file FILE [-ORB...]" << std::endl;
        return 2;
      }
      CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
      PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
      Echo_i* servant = new Echo_i;
      PortableServer::ObjectId_var id = poa->activate_object(servant);
      CORBA::Object_var ref = poa->id_to_reference(id);
      CORBA::String_var ior = orb->object_to_string(ref);
      {
        std::string tmp = std::string(ior_file) + ".tmp";
        std::ofstream out(tmp.c_str());
        out << (const char*)ior << std::endl;
        out.close();
        std::rename(tmp.c_str(), ior_file);
      }
      PortableServer::POAManager_var mgr = poa->the_POAManager();
      mgr->activate();
      orb->run();
      orb->destroy();
      return 0;
    }
    if ((mode == "anys" && argc >= 4) || (mode == "sequences" && argc >= 4)) {
      Differential::Echo_var e = resolve(orb, argv[2]);
      check(!CORBA::is_nil(e), "_narrow to Differential::Echo");
      if (!CORBA::is_nil(e)) {
        if (mode == "anys")
          run_anys(orb, e, argv[3]);
        else
          run_sequences(e, (CORBA::ULong)std::strtoul(argv[3], 0, 10));
      }
      std::cout << passed << " passed, " << failed << " failed" << std::endl;
      orb->destroy();
      return failed == 0 && passed > 0 ? 0 : 1;
    }
    std::cerr << "usage: diff_peer serve|anys|sequences ..." << std::endl;
    return 2;
  } catch (CORBA::Exception& e) {
    std::cerr << "diff_peer: CORBA exception " << e._name() << std::endl;
    return 1;
  }
}
