// omniORB implementation of Interop::Everything, the server half of the
// interoperability tests. Usage:
//   interop_server --ior-file FILE [-ORBendPoint giop:tcp:127.0.0.1:0] [-ORB...]
// Writes its IOR to FILE and serves until killed (or until `shutdown` via
// a oneway ping(-1)).
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <omniORB4/CORBA.h>
#include "interop.hh"

static CORBA::ORB_var orb;

class Everything_i : public POA_Interop::Everything {
 public:
  Everything_i() : counter_(0), oneways_(0) {}
  char* base_op() { return CORBA::string_dup("base"); }
  char* base_name() { return CORBA::string_dup("omniORB base"); }
  CORBA::Short echo_short(CORBA::Short v) { return v; }
  CORBA::UShort echo_ushort(CORBA::UShort v) { return v; }
  CORBA::Long echo_long(CORBA::Long v) { return v; }
  CORBA::ULong echo_ulong(CORBA::ULong v) { return v; }
  CORBA::LongLong echo_longlong(CORBA::LongLong v) { return v; }
  CORBA::ULongLong echo_ulonglong(CORBA::ULongLong v) { return v; }
  CORBA::Float echo_float(CORBA::Float v) { return v; }
  CORBA::Double echo_double(CORBA::Double v) { return v; }
  CORBA::Boolean echo_boolean(CORBA::Boolean v) { return v; }
  CORBA::Char echo_char(CORBA::Char v) { return v; }
  CORBA::WChar echo_wchar(CORBA::WChar v) { return v; }
  CORBA::Octet echo_octet(CORBA::Octet v) { return v; }
  Interop::Primitives echo_primitives(const Interop::Primitives& v) { return v; }
  Interop::Money echo_money(const Interop::Money& v) { return v; }
  char* echo_string(const char* v) { return CORBA::string_dup(v); }
  CORBA::WChar* echo_wstring(const CORBA::WChar* v) { return CORBA::wstring_dup(v); }
  char* echo_short_string(const char* v) { return CORBA::string_dup(v); }
  Interop::LongSeq* echo_longs(const Interop::LongSeq& v) { return new Interop::LongSeq(v); }
  Interop::StringSeq* echo_strings(const Interop::StringSeq& v) { return new Interop::StringSeq(v); }
  Interop::OctetSeq* echo_octets(const Interop::OctetSeq& v) { return new Interop::OctetSeq(v); }
  Interop::BoundedLongSeq* echo_bounded(const Interop::BoundedLongSeq& v) {
    return new Interop::BoundedLongSeq(v);
  }
  Interop::Matrix_slice* echo_matrix(const Interop::Matrix v) { return Interop::Matrix_dup(v); }
  Interop::Shape* echo_shape(const Interop::Shape& v) { return new Interop::Shape(v); }
  Interop::Color echo_color(Interop::Color v) { return v; }
  Interop::Value* echo_value(const Interop::Value& v) { return new Interop::Value(v); }
  Interop::Choice* echo_choice(const Interop::Choice& v) { return new Interop::Choice(v); }
  Interop::Flag echo_flag(const Interop::Flag& v) { return v; }
  CORBA::Any* echo_any(const CORBA::Any& v) { return new CORBA::Any(v); }
  CORBA::Long split(CORBA::Long a, CORBA::Long& b, CORBA::Long_out c) {
    CORBA::Long r = a + b;
    c = a - b;
    b = b * 2;
    return r;
  }
  void out_shape(Interop::Shape_out s, CORBA::String_out name) {
    Interop::Shape* shape = new Interop::Shape;
    shape->name = CORBA::string_dup("triangle");
    shape->hue = Interop::blue;
    shape->points.length(3);
    for (CORBA::ULong i = 0; i < 3; i++) {
      shape->points[i].x = i;
      shape->points[i].y = i * i;
    }
    shape->origin.x = -1;
    shape->origin.y = -2;
    s = shape;
    name = CORBA::string_dup("out");
  }
  void fail(CORBA::Long code) {
    if (code == 0) throw Interop::Empty();
    Interop::StringSeq details;
    details.length(2);
    details[0] = CORBA::string_dup("first");
    details[1] = CORBA::string_dup("second");
    throw Interop::Failure(code, "failed on purpose", details);
  }
  void fail_system(CORBA::Long minor) {
    throw CORBA::NO_PERMISSION((CORBA::ULong)minor, CORBA::COMPLETED_YES);
  }
  Interop::Everything_ptr get_self() { return _this(); }
  Interop::Base_ptr get_base() { return _this(); }
  char* call_peer(Interop::Peer_ptr p, const char* text) { return p->hello(text); }
  CORBA::Boolean same_object(CORBA::Object_ptr a, CORBA::Object_ptr b) {
    return a->_is_equivalent(b);
  }
  CORBA::Long counter() { return counter_; }
  void counter(CORBA::Long v) { counter_ = v; }
  char* name() { return CORBA::string_dup("omniORB everything"); }
  void ping(CORBA::Long n) {
    if (n < 0) {
      orb->shutdown(false);
      return;
    }
    oneways_ += 1;
  }
  CORBA::Long oneway_count() { return oneways_.load(); }

 private:
  CORBA::Long counter_;
  // omniORB may run a connection's pipelined oneways on several threads
  // at once (a worker per request waiting in its buffer).
  std::atomic<CORBA::Long> oneways_;
};

int main(int argc, char** argv) {
  try {
    orb = CORBA::ORB_init(argc, argv);
    const char* ior_file = 0;
    for (int i = 1; i < argc; i++) {
      if (std::strcmp(argv[i], "--ior-file") == 0 && i + 1 < argc) ior_file = argv[++i];
    }
    if (!ior_file) {
      std::cerr << "usage: interop_server --ior-file FILE [-ORB...]" << std::endl;
      return 2;
    }
    CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
    Everything_i* servant = new Everything_i;
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
  } catch (CORBA::Exception& e) {
    std::cerr << "interop_server: CORBA exception " << e._name() << std::endl;
    return 1;
  }
  return 0;
}
