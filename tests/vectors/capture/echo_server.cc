// omniORB server of tests/vectors/capture/vectors.idl, the server half of
// the captured sessions. Usage:
//   echo_server --ior-dir DIR [-ORBendPoint ...] [-ORBendPointPublish ...]
// Serves Bench::Echo, Stock::Quoter and Kinds::Types under the plain object
// keys Echo, Quoter and Types (omniORB's INS POA), writes their IORs to
// DIR/echo.ior, DIR/quoter.ior and DIR/types.ior (each through a rename, so
// a reader never sees half a file), and serves until SIGTERM or SIGINT;
// then prints "server exiting: pings received=N last=M".
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <pthread.h>
#include <omniORB4/CORBA.h>
#include "vectors.hh"

static CORBA::ORB_var orb;
static CORBA::Object_var types_ref;
static CORBA::Long pings = 0;
static CORBA::Long last_ping = 0;

class Echo_i : public POA_Bench::Echo {
 public:
  CORBA::LongLong echo_ll(CORBA::LongLong v) { return v; }
  void noop() {}
  void ping(CORBA::Long n) {
    pings++;
    last_ping = n;
  }
  char* echo_str(const char* s) { return CORBA::string_dup(s); }
  CORBA::WChar* echo_wstr(const CORBA::WChar* s) { return CORBA::wstring_dup(s); }
  Bench::Bytes* echo_bytes(const Bench::Bytes& b) { return new Bench::Bytes(b); }
};

class Quoter_i : public POA_Stock::Quoter {
 public:
  CORBA::Long get_quote(const char* stock_name) {
    if (std::strcmp(stock_name, "IBM") == 0) return 216;
    throw Stock::Invalid_Stock_Symbol();
  }
};

class Types_i : public POA_Kinds::Types {
 public:
  Types_i() : counter_(0) {}
  char* base_op() { return CORBA::string_dup("Kinds::Base"); }
  Kinds::Shape* echo_shape(const Kinds::Shape& s) { return new Kinds::Shape(s); }
  Kinds::Value* echo_value(const Kinds::Value& v) { return new Kinds::Value(v); }
  Kinds::Matrix_slice* echo_matrix(const Kinds::Matrix m) { return Kinds::Matrix_dup(m); }
  CORBA::Any* echo_any(const CORBA::Any& a) { return new CORBA::Any(a); }
  void split(CORBA::Long a, CORBA::Long& b, CORBA::Long_out c) {
    c = b;
    b = a + b;
  }
  void fail(const char* reason) {
    throw Kinds::Failure(reason, (CORBA::Long)std::strlen(reason));
  }
  CORBA::Long counter() { return counter_; }
  void counter(CORBA::Long v) { counter_ = v; }
  char* name() { return CORBA::string_dup("Types"); }
  Kinds::Types_ptr get_self() { return Kinds::Types::_narrow(types_ref); }
  CORBA::LongLong sum(const Kinds::LongLongSeq& values) {
    CORBA::LongLong total = 0;
    for (CORBA::ULong i = 0; i < values.length(); i++) total += values[i];
    return total;
  }
  CORBA::Float echo_float(CORBA::Float v) { return v; }
  CORBA::UShort echo_ushort(CORBA::UShort v) { return v; }
  CORBA::Char echo_char(CORBA::Char v) { return v; }
  CORBA::Octet echo_octet(CORBA::Octet v) { return v; }
  CORBA::Boolean echo_bool(CORBA::Boolean v) { return v; }

 private:
  CORBA::Long counter_;
};

// Waits for SIGTERM or SIGINT (blocked in every thread) and shuts the ORB
// down, so that main prints its summary and exits normally.
static void* wait_for_signal(void*) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  orb->shutdown(0);
  return 0;
}

static void write_ior(const std::string& dir, const char* name, CORBA::Object_ptr obj) {
  CORBA::String_var ior = orb->object_to_string(obj);
  std::string path = dir + "/" + name;
  std::string tmp = path + ".tmp";
  std::ofstream out(tmp.c_str());
  out << (const char*)ior << std::endl;
  out.close();
  std::rename(tmp.c_str(), path.c_str());
}

static CORBA::Object_ptr activate(PortableServer::POA_ptr poa, const char* key,
                                  PortableServer::ServantBase* servant) {
  PortableServer::ObjectId_var id = PortableServer::string_to_ObjectId(key);
  poa->activate_object_with_id(id, servant);
  return poa->id_to_reference(id);
}

int main(int argc, char** argv) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, 0);
  try {
    orb = CORBA::ORB_init(argc, argv);
    const char* dir = 0;
    for (int i = 1; i < argc; i++) {
      if (std::strcmp(argv[i], "--ior-dir") == 0 && i + 1 < argc) dir = argv[++i];
    }
    if (!dir) {
      std::cerr << "usage: echo_server --ior-dir DIR [-ORB...]" << std::endl;
      return 2;
    }
    CORBA::Object_var obj = orb->resolve_initial_references("omniINSPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
    CORBA::Object_var echo = activate(poa, "Echo", new Echo_i);
    CORBA::Object_var quoter = activate(poa, "Quoter", new Quoter_i);
    types_ref = activate(poa, "Types", new Types_i);
    PortableServer::POAManager_var mgr = poa->the_POAManager();
    mgr->activate();
    write_ior(dir, "echo.ior", echo);
    write_ior(dir, "quoter.ior", quoter);
    write_ior(dir, "types.ior", types_ref);
    pthread_t waiter;
    pthread_create(&waiter, 0, wait_for_signal, 0);
    orb->run();
    std::cout << "server exiting: pings received=" << pings << " last=" << last_ping
              << std::endl;
    orb->destroy();
  } catch (CORBA::Exception& e) {
    std::cerr << "echo_server: CORBA exception " << e._name() << std::endl;
    return 1;
  }
  return 0;
}
