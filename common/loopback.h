// Whether a HOST:PORT is on this machine's loopback interface, decided from the addresses the
// host name resolves to, never from its text: "127.0.0.1.evil.example:80" is not loopback and a
// "localhost" that /etc/hosts maps elsewhere is not either.
#ifndef TRAIND_COMMON_LOOPBACK_H_
#define TRAIND_COMMON_LOOPBACK_H_

#include <string>

namespace traind {

// True when HOST:PORT (or [V6]:PORT) resolves, and every address it resolves to is loopback
// (127.0.0.0/8, ::1, or ::ffff:127.x.y.z). Unresolvable or malformed: false.
bool IsLoopbackAddress(const std::string& host_port);

}  // namespace traind

#endif  // TRAIND_COMMON_LOOPBACK_H_
