// What every verb gets: the global options, the output streams and a connection to traind.
// One per trainctl invocation; single-threaded.
#ifndef TRAIND_CLIENT_CONTEXT_H_
#define TRAIND_CLIENT_CONTEXT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "connect/connection.h"
#include "google/protobuf/message.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

struct GlobalOptions {
  ConnectionOptions connection;  // --addr, --tls-*, --token-file, --context (and TRAINCTL_*)
  std::string output = "table";  // table | json
  std::string config_path;       // the contexts file
};

class Context {
 public:
  Context(std::ostream& out, std::ostream& err, bool out_is_terminal)
      : out_(out), err_(err), out_is_terminal_(out_is_terminal) {}

  GlobalOptions& options() { return options_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  bool json() const { return options_.output == "json"; }
  bool out_is_terminal() const { return out_is_terminal_; }

  // The same options and connection, printing to `out`.
  Context WithOutput(std::ostream& out, bool out_is_terminal) const {
    Context copy(out, err_, out_is_terminal);
    copy.options_ = options_;
    copy.resolved_ = resolved_;
    return copy;
  }

  // Reads the context and the files the connection options name; called once after parsing.
  absl::Status ResolveConnection();
  // Where calls go (after ResolveConnection), for messages.
  const std::string& addr() const { return resolved_.addr; }

  // The stub for the resolved connection, created on first use.
  trainer::v1::Trainer::Stub& stub();

  // Prints "trainctl: <message>" (with a hint for an unreachable daemon) and returns the exit
  // code for `status`.
  int Fail(const grpc::Status& status);
  // Prints "trainctl: <message>" and returns kExitUsage.
  int UsageError(const std::string& message);

  // Protobuf's JSON mapping, lowerCamelCase, one document (pretty) or one line.
  void PrintJson(const google::protobuf::Message& message, bool one_line = false);

 private:
  std::ostream& out_;
  std::ostream& err_;
  const bool out_is_terminal_;
  GlobalOptions options_;
  ResolvedConnection resolved_;
  std::unique_ptr<trainer::v1::Trainer::Stub> stub_;
};

}  // namespace traind

#endif  // TRAIND_CLIENT_CONTEXT_H_
