// trainctl shutdown: stop the traind this connection reaches, as SIGTERM would: running jobs
// checkpoint and are queued again for its next start. Admins only (the Unix socket's user is one).
// It waits until the daemon stops answering, so a script can start another one right after.

#include <chrono>
#include <thread>

#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/process_ended.h"
#include "client/rpc.h"

namespace traind {

void AddShutdownCommand(CLI::App& app, Context& ctx, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "shutdown", "Stop traind (running jobs checkpoint and resume at its next start)");
  cmd->footer(
      "Example:\n  trainctl shutdown\n  trainctl --context lab shutdown   # an admin token");
  cmd->callback([&ctx, exit_code] {
    // On this machine (the Unix socket): wait until the process has exited, so its state
    // directory is free for the next traind. Its pid as this machine numbers it comes from the
    // socket (the pid traind reports is its own namespace's: 1 in a container). Elsewhere, or
    // where the socket cannot say: until it stops answering. At most a minute either way:
    // running jobs checkpoint first.
    const std::string& addr = ctx.addr();
    const bool local = addr.rfind("unix:", 0) == 0 || addr.rfind("/", 0) == 0;
    const pid_t listener = local ? ListenerPid(addr[0] == '/' ? addr : addr.substr(5)) : 0;
    trainer::v1::ShutdownResponse response;
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().Shutdown(call.get(), {}, &response);
    if (!status.ok()) {
      *exit_code = ctx.Fail(status);
      return;
    }
    for (int i = 0; i < 600; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      bool stopped = false;
      if (listener > 0) {
        stopped = ProcessEnded(listener);
      } else {
        trainer::v1::ListDevicesResponse devices;
        auto ping = UnaryCall();
        ping->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
        stopped = !ctx.stub().ListDevices(ping.get(), {}, &devices).ok();
      }
      if (stopped) {
        // Its pid here where the socket said (a containerized traind calls itself 1).
        ctx.out() << "traind (pid " << (listener > 0 ? listener : response.pid()) << ") stopped\n";
        *exit_code = kExitOk;
        return;
      }
    }
    ctx.err() << "trainctl: traind (pid " << response.pid()
              << ") is still answering a minute after it was asked to stop\n";
    *exit_code = kExitJobFailed;
  });
}

}  // namespace traind
