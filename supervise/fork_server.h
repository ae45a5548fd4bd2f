// traind-worker --fork-server: loads LibTorch once, then forks a worker from itself for each of
// traind's requests (supervise/fork_protocol.h). A forked worker is ready in a few milliseconds;
// one started as a program spends 0.6-1 s and about a core-second loading LibTorch first, which
// packed trials that end together cannot wait for (docs/benchmarks-history.md, session 46).
// The child is traind's, not the server's (clone's CLONE_PARENT): traind waits for it, signals it
// and reads its exit status as for a worker it started itself, and the child's parent-death
// signal follows the thread of traind's that started the server.
// A forked child is sound only while the server has one thread and has never touched a GPU: the
// child creates its own CUDA context, and a fork copies only the thread that forks. So the server
// stops the threads OpenBLAS starts when it is loaded (as OpenBLAS's own fork handler does),
// refuses to fork while it has more than one thread, and never initialises CUDA, not even to
// count devices (CUDA cannot be used again in a child of a process that has).
// The clone is the raw system call, so glibc's fork handlers do not run in the child; the one
// piece of their work a child needs, its own thread id in glibc's thread descriptor, the kernel
// writes there (CLONE_CHILD_SETTID), as glibc's fork has it do. A server that cannot find that
// slot (another C library or layout) exits at once, and traind starts workers as programs.
// Linux on x86_64 and arm64.
#ifndef TRAIND_SUPERVISE_FORK_SERVER_H_
#define TRAIND_SUPERVISE_FORK_SERVER_H_

namespace traind {

// The flag that makes traind-worker (and supervise's fake worker) a fork server, its socket on
// stdin.
inline constexpr char kForkServerFlag[] = "--fork-server";

// Serves traind's requests on `socket`. Returns only in a forked child, with the request's
// stdin, stdout, stderr and environment and the socket closed: the caller goes on as the program
// it is would have from main. The server itself exits when traind closes the socket, and dies
// with traind. `argv`: main's; a child blanks its arguments out, so that ps and
// /proc/PID/cmdline show it as the worker it is rather than as a fork server.
void ServeForks(int socket, char** argv);

}  // namespace traind

#endif  // TRAIND_SUPERVISE_FORK_SERVER_H_
