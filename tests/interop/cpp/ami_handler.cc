// omniORB reply handler for Interop::Everything (POA_Interop::AMI_EverythingHandler,
// from interop.idl compiled with omniidl -Wbami), for the AMI tests of
// crates/armillary-codegen-tests/tests/ami_interop.rs: an Armillary client
// sends its replies here. Usage:
//   interop_ami_handler [-ORBendPoint giop:tcp:127.0.0.1:0] [-ORB...]
// Prints the handler's IOR on a line of standard output, then one line per
// reply it receives, in the form of Armillary's LineHandler
// (crates/armillary-codegen-tests/src/line_handler.rs): the operation, then
// each value (strings quoted, sequences as [a, b]), e.g. `echo_long -42`,
// `split 12 10 2`, `echo_string "text"`, `out_shape "triangle" Blue 3 "out"`.
// Operations it does not implement print `<op> unexpected`.
//
// An exception reply (`<op>_excep`) would print only `<op>_excep`: omniORB
// 4.2's Messaging::ExceptionHolder has no state members (its messaging.idl
// leaves them out), so the exception cannot be read from it. In fact none
// arrives: omniORB has no value factory for the holder in a process that
// did not make the request, so it refuses `_excep` calls with MARSHAL
// (MARSHAL_NoValueFactory) before they reach this class.
//
// Exits when its standard input closes.
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <omniORB4/CORBA.h>
#include "interop.hh"

namespace {

std::mutex out_mutex;

void line(const std::string& text) {
  std::lock_guard<std::mutex> lock(out_mutex);
  std::cout << text << std::endl;  // endl flushes: the test reads each line as it comes
}

std::string quoted(const char* s) { return std::string("\"") + s + "\""; }

std::string strings(const Interop::StringSeq& v) {
  std::string out = "[";
  for (CORBA::ULong i = 0; i < v.length(); i++) {
    if (i) out += ", ";
    out += quoted(v[i]);
  }
  return out + "]";
}

const char* color(Interop::Color c) {
  switch (c) {
    case Interop::red: return "Red";
    case Interop::green: return "Green";
    case Interop::blue: return "Blue";
  }
  return "?";
}

#define UNEXPECTED(op, ...) \
  void op(__VA_ARGS__) override { line(#op " unexpected"); }
#define EXCEP(op) \
  void op##_excep(Messaging::ExceptionHolder*) override { line(#op "_excep"); }

class Handler : public POA_Interop::AMI_EverythingHandler {
 public:
  // Interop::Base
  void base_op(const char* v) override { line("base_op " + quoted(v)); }
  void get_base_name(const char* v) override { line("get_base_name " + quoted(v)); }

  // What the tests send.
  void echo_long(CORBA::Long v) override { line("echo_long " + std::to_string(v)); }
  void echo_string(const char* v) override { line("echo_string " + quoted(v)); }
  void echo_strings(const Interop::StringSeq& v) override { line("echo_strings " + strings(v)); }
  void split(CORBA::Long r, CORBA::Long b, CORBA::Long c) override {
    std::ostringstream s;
    s << "split " << r << " " << b << " " << c;
    line(s.str());
  }
  void out_shape(const Interop::Shape& s, const char* name) override {
    std::ostringstream o;
    o << "out_shape " << quoted(s.name) << " " << color(s.hue) << " " << s.points.length() << " "
      << quoted(name);
    line(o.str());
  }
  void fail() override { line("fail"); }
  void fail_system() override { line("fail_system"); }
  void get_counter(CORBA::Long v) override { line("get_counter " + std::to_string(v)); }
  void set_counter() override { line("set_counter"); }
  void get_name(const char* v) override { line("get_name " + quoted(v)); }

  // The rest.
  UNEXPECTED(echo_short, CORBA::Short)
  UNEXPECTED(echo_ushort, CORBA::UShort)
  UNEXPECTED(echo_ulong, CORBA::ULong)
  UNEXPECTED(echo_longlong, CORBA::LongLong)
  UNEXPECTED(echo_ulonglong, CORBA::ULongLong)
  UNEXPECTED(echo_float, CORBA::Float)
  UNEXPECTED(echo_double, CORBA::Double)
  UNEXPECTED(echo_boolean, CORBA::Boolean)
  UNEXPECTED(echo_char, CORBA::Char)
  UNEXPECTED(echo_wchar, CORBA::WChar)
  UNEXPECTED(echo_octet, CORBA::Octet)
  UNEXPECTED(echo_primitives, const Interop::Primitives&)
  UNEXPECTED(echo_money, const Interop::Money&)
  UNEXPECTED(echo_wstring, const CORBA::WChar*)
  UNEXPECTED(echo_short_string, const char*)
  UNEXPECTED(echo_longs, const Interop::LongSeq&)
  UNEXPECTED(echo_octets, const Interop::OctetSeq&)
  UNEXPECTED(echo_bounded, const Interop::BoundedLongSeq&)
  UNEXPECTED(echo_matrix, const Interop::Matrix)
  UNEXPECTED(echo_shape, const Interop::Shape&)
  UNEXPECTED(echo_color, Interop::Color)
  UNEXPECTED(echo_value, const Interop::Value&)
  UNEXPECTED(echo_choice, const Interop::Choice&)
  UNEXPECTED(echo_flag, const Interop::Flag&)
  UNEXPECTED(echo_any, const CORBA::Any&)
  UNEXPECTED(get_self, Interop::Everything_ptr)
  UNEXPECTED(get_base, Interop::Base_ptr)
  UNEXPECTED(call_peer, const char*)
  UNEXPECTED(same_object, CORBA::Boolean)
  UNEXPECTED(oneway_count, CORBA::Long)

  EXCEP(base_op)
  EXCEP(get_base_name)
  EXCEP(echo_short)
  EXCEP(echo_ushort)
  EXCEP(echo_long)
  EXCEP(echo_ulong)
  EXCEP(echo_longlong)
  EXCEP(echo_ulonglong)
  EXCEP(echo_float)
  EXCEP(echo_double)
  EXCEP(echo_boolean)
  EXCEP(echo_char)
  EXCEP(echo_wchar)
  EXCEP(echo_octet)
  EXCEP(echo_primitives)
  EXCEP(echo_money)
  EXCEP(echo_string)
  EXCEP(echo_wstring)
  EXCEP(echo_short_string)
  EXCEP(echo_longs)
  EXCEP(echo_strings)
  EXCEP(echo_octets)
  EXCEP(echo_bounded)
  EXCEP(echo_matrix)
  EXCEP(echo_shape)
  EXCEP(echo_color)
  EXCEP(echo_value)
  EXCEP(echo_choice)
  EXCEP(echo_flag)
  EXCEP(echo_any)
  EXCEP(split)
  EXCEP(out_shape)
  EXCEP(fail)
  EXCEP(fail_system)
  EXCEP(get_self)
  EXCEP(get_base)
  EXCEP(call_peer)
  EXCEP(same_object)
  EXCEP(get_counter)
  EXCEP(set_counter)
  EXCEP(get_name)
  EXCEP(oneway_count)
};

}  // namespace

int main(int argc, char** argv) {
  try {
    CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
    CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
    Handler* handler = new Handler;
    PortableServer::ObjectId_var id = poa->activate_object(handler);
    handler->_remove_ref();
    CORBA::Object_var ref = poa->id_to_reference(id);
    PortableServer::POAManager_var mgr = poa->the_POAManager();
    mgr->activate();
    CORBA::String_var ior = orb->object_to_string(ref);
    line(std::string((const char*)ior));
    // omniORB's own threads serve the handler; this one waits for the end.
    std::string ignored;
    while (std::getline(std::cin, ignored)) {
    }
    orb->shutdown(true);
    orb->destroy();
  } catch (CORBA::Exception& e) {
    std::cerr << "interop_ami_handler: CORBA exception " << e._name() << std::endl;
    return 1;
  }
  return 0;
}
