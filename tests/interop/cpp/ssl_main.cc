// SSL front end for the omniORB interop peers: sets up omniORB's SSL
// transport (libomnisslTP4) from its own options, then runs the plain peer
// (server.cc or client.cc, compiled with -Dmain=plain_main). Usage:
//   interop_ssl_server --ssl-ca CA.pem --ssl-key CERT_AND_KEY.pem
//       [--ssl-verify none|peer|require] <interop_server options>
//   interop_ssl_client --ssl-ca CA.pem --ssl-key CERT_AND_KEY.pem
//       [--ssl-verify none|peer|require] <interop_client options>
// --ssl-key names one PEM file holding the certificate chain and the
// private key (omniORB's sslContext::key_file). --ssl-verify sets the
// OpenSSL verify mode: none (SSL_VERIFY_NONE), peer (SSL_VERIFY_PEER) or
// require (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, omniORB's
// default). To make an SSL-only server, pass -ORBendPoint giop:ssl:HOST:PORT.
#include <cstring>
#include <iostream>
#include <vector>
#include <openssl/ssl.h>
#include <omniORB4/CORBA.h>
#include <omniORB4/sslContext.h>

int plain_main(int argc, char** argv);

int main(int argc, char** argv) {
  std::vector<char*> rest;
  rest.push_back(argv[0]);
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--ssl-ca") == 0 && i + 1 < argc) {
      sslContext::certificate_authority_file = argv[++i];
    } else if (std::strcmp(argv[i], "--ssl-key") == 0 && i + 1 < argc) {
      sslContext::key_file = argv[++i];
    } else if (std::strcmp(argv[i], "--ssl-verify") == 0 && i + 1 < argc) {
      const char* mode = argv[++i];
      if (std::strcmp(mode, "none") == 0) {
        sslContext::verify_mode = SSL_VERIFY_NONE;
      } else if (std::strcmp(mode, "peer") == 0) {
        sslContext::verify_mode = SSL_VERIFY_PEER;
      } else if (std::strcmp(mode, "require") == 0) {
        sslContext::verify_mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      } else {
        std::cerr << "--ssl-verify: expected none, peer or require" << std::endl;
        return 2;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  sslContext::key_file_password = "";
  rest.push_back(0);
  return plain_main((int)rest.size() - 1, rest.data());
}
