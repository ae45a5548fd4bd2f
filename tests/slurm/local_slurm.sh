# A private Slurm on this machine for the tests: munged, slurmctld and one slurmd (this host, as
# many CPUs as it has), with accounting (slurmdbd on a private MariaDB) where those are installed,
# each on its own socket or port, with every file under one directory.
# Sourced by tests/slurm/slurm_test.sh.
#   local_slurm_start DIR    starts them; exports SLURM_CONF; returns 1 (with SKIP_REASON set)
#                            when this machine cannot run them
#   local_slurm_stop DIR     stops them (also on the test's exit)

local_slurm_start() {
  local dir=$1
  SKIP_REASON=""
  for program in munged slurmctld slurmd sbatch squeue scancel scontrol; do
    if ! command -v "$program" > /dev/null; then
      SKIP_REASON="$program not installed (deploy/install-deps.sh --for slurm installs Slurm and munge)"
      return 1
    fi
  done
  if [ "$(id -u)" != 0 ]; then
    SKIP_REASON="starting slurmd needs root (it runs each job as its user)"
    return 1
  fi
  mkdir -p "$dir/munge" "$dir/ctld" "$dir/spool"
  chmod 700 "$dir/munge"
  # A key of its own: the machine's munged (if any) and this one never mix credentials.
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" || { SKIP_REASON="munged did not start: $(tail -n 3 "$dir/munge/munged.log" 2>/dev/null)"; return 1; }
  local host cpus ctld_port slurmd_port
  host=$(hostname -s)
  cpus=$(nproc)
  # Ports of their own, away from a system Slurm's 6817/6818.
  ctld_port=$((17000 + RANDOM % 2000))
  slurmd_port=$((ctld_port + 1))
  cat > "$dir/slurm.conf" <<CONF
ClusterName=traindtest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
SlurmdTimeout=30
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  ACCOUNTING=""
  cp "$dir/slurm.conf" "$dir/slurm.conf.plain"
  # sacctmgr (and slurmctld) find slurmdbd through slurm.conf; its "password" is the munge socket.
  sed -i '/^AccountingStorageType=accounting_storage\/none$/d' "$dir/slurm.conf"
  cat >> "$dir/slurm.conf" <<CONF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$((ctld_port + 2))
AccountingStoragePass=$dir/munge/socket
CONF
  if local_slurm_start_accounting "$dir" "$((ctld_port + 2))" "$((ctld_port + 3))"; then
    ACCOUNTING=slurmdbd
  else
    cp "$dir/slurm.conf.plain" "$dir/slurm.conf"
  fi
  slurmctld -f "$dir/slurm.conf" || { SKIP_REASON="slurmctld did not start: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null)"; return 1; }
  slurmd -f "$dir/slurm.conf" || { SKIP_REASON="slurmd did not start: $(tail -n 3 "$dir/slurmd.log" 2>/dev/null)"; return 1; }
  local i
  for i in $(seq 1 60); do
    if sinfo --noheader --format=%T 2>/dev/null | grep -qx "idle"; then return 0; fi
    sleep 0.5
  done
  SKIP_REASON="the local node never became idle: $(sinfo 2>&1 | tail -n 2 | tr '\n' ' ') $(tail -n 3 "$dir/slurmd.log" 2>/dev/null | tr '\n' ' ')"
  return 1
}

# Accounting, so that sacct answers: MariaDB on a loopback port with a database directory of its
# own, and slurmdbd in front of it. Optional: without mariadbd or slurmdbd (or when they do not
# start) the Slurm runs without accounting and ACCOUNTING stays empty.
local_slurm_start_accounting() {
  local dir=$1 dbd_port=$2 db_port=$3
  command -v mariadbd >/dev/null && command -v slurmdbd >/dev/null \
    && command -v mariadb-install-db >/dev/null || return 1
  mkdir -p "$dir/db"
  mariadb-install-db --no-defaults --datadir="$dir/db/data" --user=root \
    --auth-root-authentication-method=normal --skip-test-db >"$dir/db/install.log" 2>&1 || return 1
  # No grant tables: a throwaway database on a loopback port, for this test's slurmdbd only.
  mariadbd --no-defaults --datadir="$dir/db/data" --socket="$dir/db/socket" --port="$db_port" \
    --bind-address=127.0.0.1 --user=root --skip-grant-tables --pid-file="$dir/db/mariadbd.pid" \
    --log-error="$dir/db/error.log" &
  echo $! > "$dir/db/started.pid"  # stopped by this even if it never wrote its own pid file
  local i
  for i in $(seq 1 60); do
    [ -S "$dir/db/socket" ] && break
    sleep 0.5
  done
  [ -S "$dir/db/socket" ] || return 1
  cat > "$dir/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
DbdHost=localhost
DbdPort=$dbd_port
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=$dir/slurmdbd.pid
LogFile=$dir/slurmdbd.log
CONF
  chmod 600 "$dir/slurmdbd.conf"
  slurmdbd || return 1  # reads slurmdbd.conf beside $SLURM_CONF
  for i in $(seq 1 60); do
    sacctmgr --immediate add cluster traindtest >/dev/null 2>&1 && return 0
    sacctmgr --noheader list cluster format=cluster 2>/dev/null | grep -q traindtest && return 0
    sleep 0.5
  done
  return 1
}

local_slurm_stop() {
  local dir=$1 pidfile i
  # Jobs first: their slurmstepd processes outlive slurmd.
  if [ -f "$dir/slurm.conf" ] && squeue --noheader --format=%i 2>/dev/null | grep -q .; then
    scancel --full $(squeue --noheader --format=%i) 2>/dev/null
    for i in $(seq 1 20); do
      squeue --noheader --states=PENDING,RUNNING,COMPLETING --format=%i 2>/dev/null | grep -q . || break
      sleep 0.5
    done
  fi
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/slurmdbd.pid" "$dir/db/mariadbd.pid" \
                 "$dir/db/started.pid" "$dir/munge/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  sleep 0.5
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/slurmdbd.pid" "$dir/db/mariadbd.pid" \
                 "$dir/db/started.pid" "$dir/munge/munged.pid"; do
    [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null
  done
  return 0
}
