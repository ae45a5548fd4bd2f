// FaultySqliteVfs (tests only): SQLite's default VFS with the next write or sync failing, once,
// with a chosen SQLite error (SQLITE_FULL, SQLITE_IOERR_WRITE, SQLITE_IOERR_FSYNC, ...). While
// the object lives it is SQLite's default VFS, so a Store opened meanwhile writes through it: the
// in-process counterpart of tests/storage/ (a real full or read-only disk, root only).
#ifndef TRAIND_SERVER_FAULTY_SQLITE_VFS_H_
#define TRAIND_SERVER_FAULTY_SQLITE_VFS_H_

#include <sqlite3.h>

#include <atomic>
#include <cstddef>

namespace traind {

class FaultySqliteVfs {
 public:
  FaultySqliteVfs() : root_(sqlite3_vfs_find(nullptr)), vfs_(*root_) {
    vfs_.zName = "traind-faulty";
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + root_->szOsFile;
    vfs_.pAppData = this;
    vfs_.xOpen = &Open;
    sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
  }
  ~FaultySqliteVfs() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(root_, /*makeDflt=*/1);
  }
  FaultySqliteVfs(const FaultySqliteVfs&) = delete;
  FaultySqliteVfs& operator=(const FaultySqliteVfs&) = delete;

  void FailNextWrite(int sqlite_error) { write_fault_ = sqlite_error; }
  // After `passing` more syncs succeed (0: the next one fails).
  void FailNextSync(int sqlite_error, int passing = 0) {
    syncs_passing_ = passing;
    sync_fault_ = sqlite_error;
  }
  int failures() const { return failures_; }

 private:
  // SQLite allocates szOsFile bytes per open file: ours, then the real VFS's file behind it.
  struct File {  // pointers only: SQLite's 8-byte alignment suits it, and the real file after it
    sqlite3_file base;
    FaultySqliteVfs* owner;
    sqlite3_file* real;
  };
  static File* Of(sqlite3_file* file) { return reinterpret_cast<File*>(file); }
  static sqlite3_file* Real(sqlite3_file* file) { return Of(file)->real; }
  static const sqlite3_io_methods* RealMethods(sqlite3_file* file) { return Real(file)->pMethods; }
  int Take(std::atomic<int>& fault) {
    const int error = fault.exchange(0);
    if (error != 0) ++failures_;
    return error;
  }

  static int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags,
                  int* out_flags) {
    auto* self = static_cast<FaultySqliteVfs*>(vfs->pAppData);
    File* ours = Of(file);
    ours->owner = self;
    ours->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + sizeof(File));
    ours->real->pMethods = nullptr;
    const int rc = self->root_->xOpen(self->root_, name, ours->real, flags, out_flags);
    // SQLite calls xClose whenever pMethods is set, even after a failed open.
    ours->base.pMethods = ours->real->pMethods != nullptr ? &kMethods : nullptr;
    return rc;
  }

  static int Close(sqlite3_file* f) { return RealMethods(f)->xClose(Real(f)); }
  static int Read(sqlite3_file* f, void* data, int amount, sqlite3_int64 offset) {
    return RealMethods(f)->xRead(Real(f), data, amount, offset);
  }
  static int Write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
    if (const int error = Of(f)->owner->Take(Of(f)->owner->write_fault_)) return error;
    return RealMethods(f)->xWrite(Real(f), data, amount, offset);
  }
  static int Truncate(sqlite3_file* f, sqlite3_int64 size) {
    return RealMethods(f)->xTruncate(Real(f), size);
  }
  static int Sync(sqlite3_file* f, int flags) {
    FaultySqliteVfs* owner = Of(f)->owner;
    const bool passes = owner->sync_fault_ != 0 && owner->syncs_passing_.fetch_sub(1) > 0;
    if (!passes) {
      if (const int error = owner->Take(owner->sync_fault_)) return error;
    }
    return RealMethods(f)->xSync(Real(f), flags);
  }
  static int FileSize(sqlite3_file* f, sqlite3_int64* size) {
    return RealMethods(f)->xFileSize(Real(f), size);
  }
  static int Lock(sqlite3_file* f, int level) { return RealMethods(f)->xLock(Real(f), level); }
  static int Unlock(sqlite3_file* f, int level) { return RealMethods(f)->xUnlock(Real(f), level); }
  static int CheckReservedLock(sqlite3_file* f, int* out) {
    return RealMethods(f)->xCheckReservedLock(Real(f), out);
  }
  static int FileControl(sqlite3_file* f, int op, void* arg) {
    return RealMethods(f)->xFileControl(Real(f), op, arg);
  }
  static int SectorSize(sqlite3_file* f) { return RealMethods(f)->xSectorSize(Real(f)); }
  static int DeviceCharacteristics(sqlite3_file* f) {
    return RealMethods(f)->xDeviceCharacteristics(Real(f));
  }
  static int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
    return RealMethods(f)->xShmMap(Real(f), page, size, extend, out);
  }
  static int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
    return RealMethods(f)->xShmLock(Real(f), offset, n, flags);
  }
  static void ShmBarrier(sqlite3_file* f) { RealMethods(f)->xShmBarrier(Real(f)); }
  static int ShmUnmap(sqlite3_file* f, int delete_flag) {
    return RealMethods(f)->xShmUnmap(Real(f), delete_flag);
  }
  // Version 2 (shared memory for WAL) and no memory-mapped I/O (xFetch), which SQLite then
  // does without.
  static constexpr sqlite3_io_methods kMethods = {2,
                                                  &Close,
                                                  &Read,
                                                  &Write,
                                                  &Truncate,
                                                  &Sync,
                                                  &FileSize,
                                                  &Lock,
                                                  &Unlock,
                                                  &CheckReservedLock,
                                                  &FileControl,
                                                  &SectorSize,
                                                  &DeviceCharacteristics,
                                                  &ShmMap,
                                                  &ShmLock,
                                                  &ShmBarrier,
                                                  &ShmUnmap,
                                                  nullptr,
                                                  nullptr};

  sqlite3_vfs* const root_;
  sqlite3_vfs vfs_;
  std::atomic<int> write_fault_{0};
  std::atomic<int> sync_fault_{0};
  std::atomic<int> syncs_passing_{0};
  std::atomic<int> failures_{0};
};

}  // namespace traind

#endif  // TRAIND_SERVER_FAULTY_SQLITE_VFS_H_
