#include "common/loopback.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace traind {

namespace {

bool IsLoopback(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace

bool IsLoopbackAddress(const std::string& host_port) {
  std::string host;
  if (!host_port.empty() && host_port[0] == '[') {
    const size_t close = host_port.find(']');
    if (close == std::string::npos || close + 1 >= host_port.size() ||
        host_port[close + 1] != ':') {
      return false;
    }
    host = host_port.substr(1, close - 1);
  } else {
    const size_t colon = host_port.rfind(':');
    if (colon == std::string::npos || colon == 0) return false;
    host = host_port.substr(0, colon);
    if (host.find(':') != std::string::npos) return false;  // bare IPv6 needs brackets
  }
  addrinfo hints;
  std::memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* results = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &results) != 0 || results == nullptr) return false;
  bool all_loopback = true;
  for (const addrinfo* r = results; r != nullptr; r = r->ai_next) {
    if (!IsLoopback(r->ai_addr)) all_loopback = false;
  }
  freeaddrinfo(results);
  return all_loopback;
}

}  // namespace traind
