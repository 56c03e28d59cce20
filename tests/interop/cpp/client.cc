// omniORB client of Interop::Everything: calls every operation on the
// object whose IOR is in FILE and checks every answer. Usage:
//   interop_client FILE [--no-wchar] [-ORBmaxGIOPVersion 1.x] [-ORB...]
// --no-wchar skips the checks that send wchar/wstring: omniORB refuses
// them in GIOP 1.0 (INV_OBJREF) and 1.1 (BAD_PARAM), whoever the peer is.
// Prints one line per check and, last, "N passed, M failed"; exits 0 only
// if nothing failed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <omniORB4/CORBA.h>
#include "interop.hh"

static int passed = 0, failed = 0;

static void check(bool ok, const char* what) {
  if (ok) {
    passed++;
    std::cout << "ok   " << what << std::endl;
  } else {
    failed++;
    std::cout << "FAIL " << what << std::endl;
  }
}

#define TRY(what, ...)                                                   \
  try {                                                                   \
    __VA_ARGS__;                                                          \
  } catch (CORBA::SystemException & e) {                                  \
    failed++;                                                             \
    std::cout << "FAIL " << what << ": system exception " << e._name()    \
              << " minor " << e.minor() << std::endl;                     \
  } catch (CORBA::Exception & e) {                                        \
    failed++;                                                             \
    std::cout << "FAIL " << what << ": exception " << e._name() << std::endl; \
  }

class Peer_i : public POA_Interop::Peer {
 public:
  char* hello(const char* text) {
    std::string s = std::string("hello, ") + text;
    return CORBA::string_dup(s.c_str());
  }
};

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  if (argc < 2) {
    std::cerr << "usage: interop_client IOR-FILE [-ORB...]" << std::endl;
    return 2;
  }
  bool wide = true;
  for (int i = 2; i < argc; i++) {
    if (std::strcmp(argv[i], "--no-wchar") == 0) wide = false;
  }
  std::ifstream in(argv[1]);
  std::string ior;
  std::getline(in, ior);
  CORBA::Object_var obj = orb->string_to_object(ior.c_str());
  Interop::Everything_var e = Interop::Everything::_narrow(obj);
  check(!CORBA::is_nil(e), "_narrow to Interop::Everything");
  if (CORBA::is_nil(e)) {
    std::cout << passed << " passed, " << failed << " failed" << std::endl;
    return 1;
  }
  TRY("_is_a false", check(!e->_is_a("IDL:Interop/Peer:1.0"), "_is_a false"));
  TRY("_non_existent", check(!e->_non_existent(), "_non_existent"));
  TRY("base_op", { CORBA::String_var s = e->base_op(); check(std::strlen(s) > 0, "base_op (inherited)"); });
  TRY("base_name", { CORBA::String_var s = e->base_name(); check(std::strlen(s) > 0, "_get_base_name"); });
  TRY("echo_short", check(e->echo_short(-12345) == -12345, "echo_short"));
  TRY("echo_ushort", check(e->echo_ushort(65535) == 65535, "echo_ushort"));
  TRY("echo_long", check(e->echo_long(-2147483647 - 1) == -2147483647 - 1, "echo_long"));
  TRY("echo_ulong", check(e->echo_ulong(4294967295U) == 4294967295U, "echo_ulong"));
  TRY("echo_longlong", check(e->echo_longlong(-9000000000000000000LL) == -9000000000000000000LL, "echo_longlong"));
  TRY("echo_ulonglong", check(e->echo_ulonglong(18000000000000000000ULL) == 18000000000000000000ULL, "echo_ulonglong"));
  TRY("echo_float", check(e->echo_float(1.5f) == 1.5f, "echo_float"));
  TRY("echo_double", check(e->echo_double(-2.25e100) == -2.25e100, "echo_double"));
  TRY("echo_boolean", check(e->echo_boolean(true) == true && e->echo_boolean(false) == false, "echo_boolean"));
  TRY("echo_char", check(e->echo_char('Z') == 'Z', "echo_char"));
  if (wide) TRY("echo_wchar", check(e->echo_wchar(0x263a) == 0x263a, "echo_wchar"));
  TRY("echo_octet", check(e->echo_octet(0xfe) == 0xfe, "echo_octet"));
  if (wide) TRY("echo_primitives", {
    Interop::Primitives p;
    p.s = -1; p.us = 2; p.l = -3; p.ul = 4; p.ll = -5; p.ull = 6;
    p.f = 7.5f; p.d = 8.25; p.b = true; p.c = 'c'; p.wc = 0x3b1; p.o = 9;
    Interop::Primitives r = e->echo_primitives(p);
    check(r.s == -1 && r.us == 2 && r.l == -3 && r.ul == 4 && r.ll == -5 && r.ull == 6 &&
          r.f == 7.5f && r.d == 8.25 && r.b && r.c == 'c' && r.wc == 0x3b1 && r.o == 9,
          "echo_primitives");
  });
  TRY("echo_money", {
    Interop::Money m("12345.67");
    Interop::Money r = e->echo_money(m);
    check(r == m, "echo_money (fixed<10,2>)");
  });
  TRY("echo_string", {
    CORBA::String_var s = e->echo_string("hello, GIOP");
    check(std::strcmp(s, "hello, GIOP") == 0, "echo_string");
    CORBA::String_var empty = e->echo_string("");
    check(std::strcmp(empty, "") == 0, "echo_string (empty)");
  });
  if (wide) TRY("echo_wstring", {
    const CORBA::WChar w[] = {'w', 'i', 'd', 'e', ' ', 0x263a, 0};
    CORBA::WString_var s = e->echo_wstring(w);
    bool same = true;
    for (int i = 0; i < 7; i++) same = same && s[i] == w[i];
    check(same, "echo_wstring");
  });
  TRY("echo_short_string", { CORBA::String_var s = e->echo_short_string("bounded"); check(std::strcmp(s, "bounded") == 0, "echo_short_string"); });
  TRY("echo_longs", {
    Interop::LongSeq v; v.length(5);
    for (CORBA::ULong i = 0; i < 5; i++) v[i] = i * 1000 - 2000;
    Interop::LongSeq_var r = e->echo_longs(v);
    bool same = r->length() == 5;
    for (CORBA::ULong i = 0; same && i < 5; i++) same = r[i] == v[i];
    check(same, "echo_longs");
  });
  TRY("echo_strings", {
    Interop::StringSeq v; v.length(3);
    v[0] = CORBA::string_dup("a"); v[1] = CORBA::string_dup(""); v[2] = CORBA::string_dup("ccc");
    Interop::StringSeq_var r = e->echo_strings(v);
    check(r->length() == 3 && std::strcmp(r[2], "ccc") == 0 && std::strcmp(r[1], "") == 0, "echo_strings");
  });
  TRY("echo_octets", {
    Interop::OctetSeq v; v.length(1000);
    for (CORBA::ULong i = 0; i < 1000; i++) v[i] = (CORBA::Octet)(i * 7);
    Interop::OctetSeq_var r = e->echo_octets(v);
    bool same = r->length() == 1000;
    for (CORBA::ULong i = 0; same && i < 1000; i++) same = r[i] == v[i];
    check(same, "echo_octets");
  });
  TRY("echo_octets (1 MiB: fragmented by omniORB in GIOP 1.1/1.2)", {
    Interop::OctetSeq v; v.length(1 << 20);
    for (CORBA::ULong i = 0; i < v.length(); i++) v[i] = (CORBA::Octet)(i * 31 + 7);
    Interop::OctetSeq_var r = e->echo_octets(v);
    bool same = r->length() == v.length();
    for (CORBA::ULong i = 0; same && i < v.length(); i++) same = r[i] == v[i];
    check(same, "echo_octets (1 MiB: fragmented by omniORB in GIOP 1.1/1.2)");
  });
  TRY("echo_longs (100000)", {
    Interop::LongSeq v; v.length(100000);
    for (CORBA::ULong i = 0; i < v.length(); i++) v[i] = (CORBA::Long)(i * 7919) - 500000;
    Interop::LongSeq_var r = e->echo_longs(v);
    bool same = r->length() == v.length();
    for (CORBA::ULong i = 0; same && i < v.length(); i++) same = r[i] == v[i];
    check(same, "echo_longs (100000 elements)");
  });
  TRY("echo_bounded", {
    Interop::BoundedLongSeq v; v.length(4);
    for (CORBA::ULong i = 0; i < 4; i++) v[i] = i;
    Interop::BoundedLongSeq_var r = e->echo_bounded(v);
    check(r->length() == 4 && r[3] == 3, "echo_bounded");
  });
  TRY("echo_matrix", {
    Interop::Matrix m;
    for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) m[i][j] = i * 10 + j;
    Interop::Matrix_slice* r = e->echo_matrix(m);
    bool same = true;
    for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) same = same && r[i][j] == m[i][j];
    Interop::Matrix_free(r);
    check(same, "echo_matrix");
  });
  TRY("echo_shape", {
    Interop::Shape s;
    s.name = CORBA::string_dup("square");
    s.hue = Interop::green;
    s.points.length(4);
    for (CORBA::ULong i = 0; i < 4; i++) { s.points[i].x = i; s.points[i].y = -(CORBA::Long)i; }
    s.origin.x = 5; s.origin.y = 6;
    Interop::Shape_var r = e->echo_shape(s);
    check(std::strcmp(r->name, "square") == 0 && r->hue == Interop::green &&
          r->points.length() == 4 && r->points[3].y == -3 && r->origin.y == 6, "echo_shape");
  });
  TRY("echo_shape (5000 points)", {
    Interop::Shape s;
    s.name = CORBA::string_dup("big");
    s.hue = Interop::blue;
    s.points.length(5000);
    for (CORBA::ULong i = 0; i < 5000; i++) { s.points[i].x = i; s.points[i].y = -(CORBA::Long)(i * 3); }
    s.origin.x = 1; s.origin.y = 2;
    Interop::Shape_var r = e->echo_shape(s);
    bool same = r->points.length() == 5000;
    for (CORBA::ULong i = 0; same && i < 5000; i++) same = r->points[i].x == (CORBA::Long)i && r->points[i].y == -(CORBA::Long)(i * 3);
    check(same && std::strcmp(r->name, "big") == 0, "echo_shape (5000 points, fragmented)");
  });
  TRY("echo_color", check(e->echo_color(Interop::blue) == Interop::blue, "echo_color"));
  TRY("echo_value", {
    Interop::Value v;
    v.as_long(7);
    Interop::Value_var r = e->echo_value(v);
    check(r->_d() == 1 && r->as_long() == 7, "echo_value (case 1)");
    v.as_string("text");
    r = e->echo_value(v);
    check(r->_d() == 2 && std::strcmp(r->as_string(), "text") == 0, "echo_value (case 2)");
    Interop::Point p; p.x = 3; p.y = 4;
    v.as_point(p);
    v._d(4);
    r = e->echo_value(v);
    check(r->_d() == 4 && r->as_point().y == 4, "echo_value (case 3/4)");
    v.as_double(0.5);
    v._d(99);
    r = e->echo_value(v);
    check(r->_d() == 99 && r->as_double() == 0.5, "echo_value (default)");
  });
  TRY("echo_choice", {
    Interop::Choice c;
    c.label("red label");
    Interop::Choice_var r = e->echo_choice(c);
    check(r->_d() == Interop::red && std::strcmp(r->label(), "red label") == 0, "echo_choice (enum discriminator)");
    CORBA::ShortSeq n; n.length(2); n[0] = 1; n[1] = 2;
    c.numbers(n);
    r = e->echo_choice(c);
    check(r->_d() == Interop::green && r->numbers().length() == 2, "echo_choice (sequence member)");
    c._default();
    r = e->echo_choice(c);
    check(r->_d() == Interop::blue, "echo_choice (implicit default, no member)");
  });
  TRY("echo_flag", {
    Interop::Flag f;
    f.yes(77);
    Interop::Flag r = e->echo_flag(f);
    check(r._d() == true && r.yes() == 77, "echo_flag (TRUE)");
    f.no('n');
    r = e->echo_flag(f);
    check(r._d() == false && r.no() == 'n', "echo_flag (FALSE)");
  });
  TRY("echo_any", {
    CORBA::Any a;
    a <<= (CORBA::Long)123;
    CORBA::Any_var r = e->echo_any(a);
    CORBA::Long l = 0;
    check((r.in() >>= l) && l == 123, "echo_any (long)");
    a <<= "any string";
    r = e->echo_any(a);
    const char* s = 0;
    check((r.in() >>= s) && std::strcmp(s, "any string") == 0, "echo_any (string)");
    Interop::Shape shape;
    shape.name = CORBA::string_dup("in any");
    shape.hue = Interop::red;
    shape.points.length(1);
    shape.points[0].x = 1; shape.points[0].y = 2;
    shape.origin.x = 0; shape.origin.y = 0;
    a <<= shape;
    r = e->echo_any(a);
    const Interop::Shape* back = 0;
    check((r.in() >>= back) && std::strcmp(back->name, "in any") == 0 && back->points.length() == 1, "echo_any (struct)");
    Interop::Value val;
    val.as_string("union in any");
    a <<= val;
    r = e->echo_any(a);
    const Interop::Value* vback = 0;
    check((r.in() >>= vback) && vback->_d() == 2, "echo_any (union)");
  });
  TRY("split", {
    CORBA::Long b = 5, c = 0;
    CORBA::Long r = e->split(10, b, c);
    check(r == 15 && b == 10 && c == 5, "split (in/inout/out)");
  });
  TRY("out_shape", {
    Interop::Shape_var s;
    CORBA::String_var name;
    e->out_shape(s.out(), name.out());
    check(std::strcmp(s->name, "triangle") == 0 && s->points.length() == 3 && s->points[2].y == 4 &&
          std::strcmp(name, "out") == 0, "out_shape (out struct, out string)");
  });
  try {
    e->fail(7);
    check(false, "fail raises Failure");
  } catch (Interop::Failure& f) {
    check(f.code == 7 && std::strcmp(f.reason, "failed on purpose") == 0 && f.details.length() == 2 &&
          std::strcmp(f.details[1], "second") == 0, "fail raises Failure with members");
  } catch (CORBA::Exception& x) {
    check(false, "fail raises Failure (got another exception)");
  }
  try {
    e->fail(0);
    check(false, "fail(0) raises Empty");
  } catch (Interop::Empty&) {
    check(true, "fail(0) raises Empty");
  } catch (CORBA::Exception&) {
    check(false, "fail(0) raises Empty (got another exception)");
  }
  try {
    e->fail_system(5);
    check(false, "fail_system raises NO_PERMISSION");
  } catch (CORBA::NO_PERMISSION& x) {
    check(x.minor() == 5 && x.completed() == CORBA::COMPLETED_YES, "fail_system raises NO_PERMISSION minor 5 COMPLETED_YES");
  } catch (CORBA::Exception&) {
    check(false, "fail_system raises NO_PERMISSION (got another exception)");
  }
  TRY("get_self", {
    Interop::Everything_var self = e->get_self();
    check(!CORBA::is_nil(self) && self->echo_long(99) == 99, "get_self (object reference result, then call on it)");
    Interop::Base_var base = e->get_base();
    CORBA::String_var s = base->base_op();
    check(std::strlen(s) > 0, "get_base (base interface reference)");
    check(e->same_object(self, self), "same_object (Object parameters)");
  });
  TRY("call_peer", {
    CORBA::Object_var pobj = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(pobj);
    PortableServer::POAManager_var mgr = poa->the_POAManager();
    mgr->activate();
    Peer_i* peer = new Peer_i;
    PortableServer::ObjectId_var id = poa->activate_object(peer);
    CORBA::Object_var pref = poa->id_to_reference(id);
    Interop::Peer_var p = Interop::Peer::_narrow(pref);
    CORBA::String_var s = e->call_peer(p, "peer");
    check(std::strcmp(s, "hello, peer") == 0, "call_peer (object reference parameter, callback)");
  });
  TRY("attributes", {
    e->counter(41);
    check(e->counter() == 41, "attribute counter (_set/_get)");
    CORBA::String_var n = e->name();
    check(std::strlen(n) > 0, "readonly attribute name");
  });
  TRY("oneway", {
    CORBA::Long before = e->oneway_count();
    e->ping(1);
    e->ping(2);
    CORBA::Long after = e->oneway_count();
    check(after == before + 2, "oneway ping (then a two-way call sees both)");
  });
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  orb->destroy();
  return failed == 0 ? 0 : 1;
}
