// omniORB client of tests/vectors/capture/vectors.idl: the client half of
// the captured sessions. Usage:
//   echo_client --ior-dir DIR --address HOST:PORT
//               --session [full|nonexist|big|bigshape] [--big N] [-ORB...]
// Reads DIR/echo.ior, DIR/quoter.ior and DIR/types.ior (as echo_server
// writes them) and makes one session's calls, checking every answer:
//   full      every operation of the IDL once, plus the object-existence
//             checks omniORB makes on its own, and a call to an object key
//             the server does not have (corbaloc at HOST:PORT, the address
//             the IORs publish);
//   nonexist  only that last call (with -ORBverifyObjectExistsAndType 0 it
//             goes out as a Request instead of a LocateRequest);
//   big       echo_bytes with N octets (default 1 MiB);
//   bigshape  echo_shape with N points (default 2000).
// Prints one line per check and, last, "N passed, M failed"; exits 0 only
// if nothing failed. omniORB refuses wstrings below GIOP 1.2 (the client
// raises INV_OBJREF in 1.0, the server BAD_PARAM in 1.1): that check is
// reported as "skip" there.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <omniORB4/CORBA.h>
#include "vectors.hh"

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

#define TRY(what, ...)                                                        \
  try {                                                                        \
    __VA_ARGS__;                                                               \
  } catch (CORBA::SystemException & e) {                                       \
    failed++;                                                                  \
    std::cout << "FAIL " << what << ": system exception " << e._name()         \
              << " minor " << e.minor() << std::endl;                          \
  } catch (CORBA::Exception & e) {                                             \
    failed++;                                                                  \
    std::cout << "FAIL " << what << ": exception " << e._name() << std::endl; \
  }

static CORBA::ORB_var orb;

static CORBA::Object_ptr read_ior(const std::string& dir, const char* name) {
  std::ifstream in((dir + "/" + name).c_str());
  std::string ior;
  std::getline(in, ior);
  if (ior.empty()) {
    std::cerr << "echo_client: no IOR in " << dir << "/" << name << std::endl;
    std::exit(2);
  }
  return orb->string_to_object(ior.c_str());
}

static void nonexistent(const std::string& address) {
  std::string url = "corbaloc:iiop:1.2@" + address + "/NoSuchObject";
  std::string what = "echo_ll on " + url + " raised OBJECT_NOT_EXIST";
  try {
    CORBA::Object_var obj = orb->string_to_object(url.c_str());
    Bench::Echo_var missing = Bench::Echo::_unchecked_narrow(obj);
    missing->echo_ll(1);
    check(false, what + " (it answered)");
  } catch (CORBA::OBJECT_NOT_EXIST& e) {
    std::ostringstream s;
    s << what << " minor " << e.minor();
    check(true, s.str());
  } catch (CORBA::Exception& e) {
    check(false, what + " (raised " + e._name() + ")");
  }
}

static void big_bytes(Bench::Echo_ptr echo, CORBA::ULong n) {
  Bench::Bytes b;
  b.length(n);
  for (CORBA::ULong i = 0; i < n; i++) b[i] = (CORBA::Octet)(1 + 13 * i);
  std::ostringstream what;
  what << "echo_bytes(" << n << " bytes)";
  TRY(what.str(), {
    Bench::Bytes_var r = echo->echo_bytes(b);
    bool same = r->length() == n;
    for (CORBA::ULong i = 0; same && i < n; i++) same = r[i] == b[i];
    check(same, what.str());
  });
}

static void big_shape(Kinds::Types_ptr types, CORBA::ULong n) {
  Kinds::Shape s;
  s.name = CORBA::string_dup("big");
  s.color = Kinds::RED;
  s.outline.length(n);
  for (CORBA::ULong i = 0; i < n; i++) {
    s.outline[i].x = i;
    s.outline[i].y = -(double)i;
  }
  std::ostringstream what;
  what << "echo_shape(" << n << " points)";
  TRY(what.str(), {
    Kinds::Shape_var r = types->echo_shape(s);
    bool same = std::strcmp(r->name, "big") == 0 && r->color == Kinds::RED &&
                r->outline.length() == n;
    for (CORBA::ULong i = 0; same && i < n; i++) {
      same = r->outline[i].x == s.outline[i].x && r->outline[i].y == s.outline[i].y;
    }
    check(same, what.str());
  });
}

static void full(const std::string& address, Bench::Echo_ptr echo, Stock::Quoter_ptr quoter,
                 Kinds::Types_ptr types) {
  // Bench::Echo. The first _is_a is answered locally (the IOR names the
  // type); the second and _non_existent go to the server.
  TRY("_is_a", check(echo->_is_a("IDL:Bench/Echo:1.0"), "_is_a(IDL:Bench/Echo:1.0)"));
  TRY("_is_a", check(!echo->_is_a("IDL:Stock/Quoter:1.0"), "_is_a(IDL:Stock/Quoter:1.0) is false"));
  TRY("_non_existent", check(!echo->_non_existent(), "_non_existent() is false"));
  TRY("echo_ll", check(echo->echo_ll(0x0102030405060708LL) == 0x0102030405060708LL,
                       "echo_ll(0x0102030405060708)"));
  TRY("echo_ll", check(echo->echo_ll(-2) == -2, "echo_ll(-2)"));
  TRY("noop", { echo->noop(); check(true, "noop()"); });
  TRY("ping", { echo->ping(7); check(true, "ping(7) oneway"); });
  TRY("echo_str", {
    CORBA::String_var r = echo->echo_str("hello, GIOP");
    check(std::strcmp(r, "hello, GIOP") == 0, "echo_str(\"hello, GIOP\")");
  });
  TRY("echo_str", {
    CORBA::String_var r = echo->echo_str("");
    check(std::strcmp(r, "") == 0, "echo_str(\"\")");
  });
  try {
    const CORBA::WChar wide[] = {'w', 'i', 'd', 'e', ' ', 0x263A, 0};
    CORBA::WString_var r = echo->echo_wstr(wide);
    bool same = true;
    for (int i = 0; i < 7 && same; i++) same = r[i] == wide[i];
    check(same, "echo_wstr(L\"wide \\u263A\")");
  } catch (CORBA::SystemException& e) {
    std::cout << "skip echo_wstr raised CORBA::" << e._name() << " minor " << e.minor()
              << " (omniORB: no wstring below GIOP 1.2)" << std::endl;
  }
  TRY("echo_bytes", {
    Bench::Bytes b;
    b.length(16);
    for (CORBA::ULong i = 0; i < 16; i++) b[i] = (CORBA::Octet)i;
    Bench::Bytes_var r = echo->echo_bytes(b);
    bool same = r->length() == 16;
    for (CORBA::ULong i = 0; same && i < 16; i++) same = r[i] == i;
    check(same, "echo_bytes(16 bytes 0..15)");
  });

  // Stock::Quoter.
  TRY("get_quote", check(quoter->get_quote("IBM") == 216, "get_quote(\"IBM\") == 216"));
  try {
    quoter->get_quote("BAD");
    check(false, "get_quote(\"BAD\") raised Stock::Invalid_Stock_Symbol");
  } catch (Stock::Invalid_Stock_Symbol&) {
    check(true, "get_quote(\"BAD\") raised Stock::Invalid_Stock_Symbol");
  } catch (CORBA::Exception& e) {
    check(false, std::string("get_quote(\"BAD\") raised ") + e._name());
  }

  // Kinds::Types.
  TRY("base_op", {
    CORBA::String_var r = types->base_op();
    check(std::strcmp(r, "Kinds::Base") == 0, "base_op() (inherited from Kinds::Base)");
  });
  TRY("echo_shape", {
    Kinds::Shape s;
    s.name = CORBA::string_dup("triangle");
    s.color = Kinds::GREEN;
    s.outline.length(3);
    s.outline[0].x = 0;
    s.outline[0].y = 0;
    s.outline[1].x = 1.5;
    s.outline[1].y = 0;
    s.outline[2].x = 0;
    s.outline[2].y = -2.25;
    Kinds::Shape_var r = types->echo_shape(s);
    bool same = std::strcmp(r->name, "triangle") == 0 && r->color == Kinds::GREEN &&
                r->outline.length() == 3 && r->outline[1].x == 1.5 && r->outline[2].y == -2.25;
    check(same, "echo_shape(struct with string, enum, sequence<struct>)");
  });
  TRY("echo_value", {
    Kinds::Value v;
    v.l(42);
    Kinds::Value_var r = types->echo_value(v);
    check(r->_d() == 1 && r->l() == 42, "echo_value(union case 1: long 42)");
  });
  TRY("echo_value", {
    Kinds::Value v;
    v.s("union string");
    Kinds::Value_var r = types->echo_value(v);
    check(r->_d() == 2 && std::strcmp(r->s(), "union string") == 0,
          "echo_value(union case 2: string)");
  });
  TRY("echo_value", {
    Kinds::Value v;
    Kinds::Point p;
    p.x = 3;
    p.y = 4;
    v.p(p);
    Kinds::Value_var r = types->echo_value(v);
    check(r->_d() == 3 && r->p().x == 3 && r->p().y == 4, "echo_value(union case 3: Point)");
  });
  TRY("echo_value", {
    Kinds::Value v;
    v.b(1);
    v._d(7);
    Kinds::Value_var r = types->echo_value(v);
    check(r->_d() == 7 && r->b() == 1,
          "echo_value(union default, discriminator 7: boolean)");
  });
  TRY("echo_matrix", {
    Kinds::Matrix m;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) m[i][j] = 10 * i + j - 4;
    Kinds::Matrix_slice* r = types->echo_matrix(m);
    bool same = true;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) same = same && r[i][j] == m[i][j];
    Kinds::Matrix_free(r);
    check(same, "echo_matrix(long[3][3])");
  });
  TRY("echo_any", {
    CORBA::Any a;
    a <<= (CORBA::Long)123456;
    CORBA::Any_var r = types->echo_any(a);
    CORBA::Long v = 0;
    check((r.in() >>= v) && v == 123456, "echo_any(long 123456)");
  });
  TRY("echo_any", {
    CORBA::Any a;
    a <<= "any string";
    CORBA::Any_var r = types->echo_any(a);
    const char* v = 0;
    check((r.in() >>= v) && std::strcmp(v, "any string") == 0, "echo_any(string)");
  });
  TRY("echo_any", {
    Kinds::Shape s;
    s.name = CORBA::string_dup("sq");
    s.color = Kinds::BLUE;
    s.outline.length(1);
    s.outline[0].x = 1;
    s.outline[0].y = 2;
    CORBA::Any a;
    a <<= s;
    CORBA::Any_var r = types->echo_any(a);
    const Kinds::Shape* v = 0;
    check((r.in() >>= v) && std::strcmp(v->name, "sq") == 0 && v->color == Kinds::BLUE &&
              v->outline.length() == 1 && v->outline[0].y == 2,
          "echo_any(Kinds::Shape)");
  });
  TRY("echo_any", {
    Kinds::Value u;
    u.s("in any");
    CORBA::Any a;
    a <<= u;
    CORBA::Any_var r = types->echo_any(a);
    const Kinds::Value* v = 0;
    check((r.in() >>= v) && v->_d() == 2 && std::strcmp(v->s(), "in any") == 0,
          "echo_any(Kinds::Value union)");
  });
  TRY("split", {
    CORBA::Long b = 10, c = 0;
    types->split(5, b, c);
    check(b == 15 && c == 10, "split(5, inout 10, out) -> io 15, out 10");
  });
  try {
    types->fail("boom");
    check(false, "fail(\"boom\") raised Kinds::Failure");
  } catch (Kinds::Failure& f) {
    check(std::strcmp(f.reason, "boom") == 0 && f.code == 4,
          "fail(\"boom\") raised Kinds::Failure{reason, code 4}");
  } catch (CORBA::Exception& e) {
    check(false, std::string("fail(\"boom\") raised ") + e._name());
  }
  TRY("counter", {
    types->counter(41);
    check(types->counter() == 41, "counter attribute: set 41, get 41");
  });
  TRY("name", {
    CORBA::String_var n = types->name();
    check(std::strcmp(n, "Types") == 0, "readonly attribute name == \"Types\"");
  });
  TRY("get_self", {
    Kinds::Types_var self = types->get_self();
    CORBA::String_var r = self->base_op();
    check(std::strcmp(r, "Kinds::Base") == 0,
          "get_self() returns an object reference; base_op() on it");
  });
  TRY("sum", {
    Kinds::LongLongSeq v;
    v.length(4);
    v[0] = 1;
    v[1] = 2;
    v[2] = 3;
    v[3] = 1LL << 40;
    check(types->sum(v) == 6 + (1LL << 40), "sum(sequence<long long>)");
  });
  TRY("echo_float", check(types->echo_float(1.5f) == 1.5f, "echo_float(1.5)"));
  TRY("echo_ushort", check(types->echo_ushort(65535) == 65535, "echo_ushort(65535)"));
  TRY("echo_char", check(types->echo_char('Z') == 'Z', "echo_char('Z')"));
  TRY("echo_octet", check(types->echo_octet(0xAB) == 0xAB, "echo_octet(0xAB)"));
  TRY("echo_bool", check(types->echo_bool(1) == 1, "echo_bool(true)"));

  nonexistent(address);
  TRY("noop", { echo->noop(); check(true, "noop() (final)"); });
}

int main(int argc, char** argv) {
  orb = CORBA::ORB_init(argc, argv);
  std::string dir, address, session = "full";
  long big = -1;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--ior-dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (std::strcmp(argv[i], "--address") == 0 && i + 1 < argc) {
      address = argv[++i];
    } else if (std::strcmp(argv[i], "--session") == 0) {
      if (i + 1 < argc && argv[i + 1][0] != '-') session = argv[++i];
    } else if (std::strcmp(argv[i], "--big") == 0 && i + 1 < argc) {
      big = std::atol(argv[++i]);
    }
  }
  if (dir.empty() || address.empty()) {
    std::cerr << "usage: echo_client --ior-dir DIR --address HOST:PORT "
                 "--session [full|nonexist|big|bigshape] "
                 "[--big N] [-ORB...]"
              << std::endl;
    return 2;
  }
  try {
    CORBA::Object_var e = read_ior(dir, "echo.ior");
    CORBA::Object_var q = read_ior(dir, "quoter.ior");
    CORBA::Object_var t = read_ior(dir, "types.ior");
    // The IORs name the types: narrowing asks the server nothing.
    Bench::Echo_var echo = Bench::Echo::_narrow(e);
    Stock::Quoter_var quoter = Stock::Quoter::_narrow(q);
    Kinds::Types_var types = Kinds::Types::_narrow(t);
    if (session == "full") {
      full(address, echo, quoter, types);
    } else if (session == "nonexist") {
      nonexistent(address);
    } else if (session == "big") {
      big_bytes(echo, big < 0 ? 1048576 : (CORBA::ULong)big);
    } else if (session == "bigshape") {
      big_shape(types, big < 0 ? 2000 : (CORBA::ULong)big);
    } else {
      std::cerr << "echo_client: unknown session " << session << std::endl;
      return 2;
    }
    orb->destroy();
  } catch (CORBA::Exception& e) {
    std::cout << "FAIL CORBA exception " << e._name() << std::endl;
    failed++;
  }
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
