// The omniORB peer of the portable-interceptor interop test
// (crates/armillary/tests/interceptors.rs), with omniORB's own
// interceptors (omniInterceptors), which see the GIOP service contexts.
//   pi_peer serve --ior-file FILE [-ORB...]
//     Interop::Everything (server.cc). Its serverReceiveRequest keeps the
//     data of the context 0x41520010 a request brings; its serverSendReply
//     answers with the context 0x41520011 "omniORB saw <that data>".
//   pi_peer call IOR [-ORB...]
//     Calls echo_long(7) on IOR with the context 0x41520012 "hello from
//     omniORB" (clientSendRequest) and prints "RESULT <n>", then
//     "REPLY_CONTEXT <data>" for the reply's context 0x41520011 or
//     "NO_REPLY_CONTEXT" (clientReceiveReply).
#include <cstring>
#include <iostream>
#include <string>
#include <omniORB4/CORBA.h>
#include <omniORB4/omniInterceptors.h>
#include <omniORB4/internal/giopStrand.h>
#include <omniORB4/internal/giopStream.h>
#include <omniORB4/internal/GIOP_S.h>
#include "interop.hh"

using omni::omniInterceptors;

int plain_main(int argc, char** argv);

static const CORBA::ULong ARMILLARY_CLIENT_CONTEXT = 0x41520010;
static const CORBA::ULong REPLY_CONTEXT = 0x41520011;
static const CORBA::ULong OMNIORB_CLIENT_CONTEXT = 0x41520012;

static omni_mutex lock;
static std::string seen;          // what the last request brought
static std::string reply_context;  // what the last reply brought
static bool got_reply_context = false;

static std::string context_data(const IOP::ServiceContextList& list, CORBA::ULong id, bool& found) {
  for (CORBA::ULong i = 0; i < list.length(); i++) {
    if (list[i].context_id == id) {
      found = true;
      return std::string((const char*)list[i].context_data.get_buffer(),
                         list[i].context_data.length());
    }
  }
  found = false;
  return std::string();
}

static void add_context(IOP::ServiceContextList& list, CORBA::ULong id, const std::string& data) {
  CORBA::ULong n = list.length();
  list.length(n + 1);
  list[n].context_id = id;
  list[n].context_data.length(data.size());
  std::memcpy(list[n].context_data.get_buffer(), data.data(), data.size());
}

static CORBA::Boolean server_receive(omniInterceptors::serverReceiveRequest_T::info_T& info) {
  bool found;
  std::string data = context_data(info.giop_s.service_contexts(), ARMILLARY_CLIENT_CONTEXT, found);
  omni_mutex_lock l(lock);
  seen = found ? data : std::string();
  return 1;
}

static CORBA::Boolean server_send_reply(omniInterceptors::serverSendReply_T::info_T& info) {
  omni_mutex_lock l(lock);
  if (!seen.empty()) add_context(info.giop_s.service_contexts(), REPLY_CONTEXT, "omniORB saw " + seen);
  return 1;
}

static CORBA::Boolean client_send(omniInterceptors::clientSendRequest_T::info_T& info) {
  add_context(info.service_contexts, OMNIORB_CLIENT_CONTEXT, "hello from omniORB");
  return 1;
}

static CORBA::Boolean client_receive(omniInterceptors::clientReceiveReply_T::info_T& info) {
  bool found;
  std::string data = context_data(info.service_contexts, REPLY_CONTEXT, found);
  omni_mutex_lock l(lock);
  got_reply_context = found;
  reply_context = data;
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: pi_peer serve --ior-file FILE | pi_peer call IOR" << std::endl;
    return 2;
  }
  std::string mode = argv[1];
  // The mode goes: the rest is what server.cc or the client reads.
  argv[1] = argv[0];
  argc -= 1;
  argv += 1;
  try {
    CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
    omniInterceptors* interceptors = omniORB::getInterceptors();
    if (mode == "serve") {
      interceptors->serverReceiveRequest.add(server_receive);
      interceptors->serverSendReply.add(server_send_reply);
      return plain_main(argc, argv);
    }
    if (mode != "call" || argc < 2) {
      std::cerr << "usage: pi_peer call IOR" << std::endl;
      return 2;
    }
    interceptors->clientSendRequest.add(client_send);
    interceptors->clientReceiveReply.add(client_receive);
    CORBA::Object_var obj = orb->string_to_object(argv[1]);
    Interop::Everything_var target = Interop::Everything::_unchecked_narrow(obj);
    CORBA::Long result = target->echo_long(7);
    std::cout << "RESULT " << result << std::endl;
    {
      omni_mutex_lock l(lock);
      if (got_reply_context) {
        std::cout << "REPLY_CONTEXT " << reply_context << std::endl;
      } else {
        std::cout << "NO_REPLY_CONTEXT" << std::endl;
      }
    }
    orb->destroy();
  } catch (CORBA::Exception& e) {
    std::cerr << "pi_peer: CORBA exception " << e._name() << std::endl;
    std::cout << "EXCEPTION " << e._name() << std::endl;
    return 1;
  }
  return 0;
}
