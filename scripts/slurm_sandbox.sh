#!/bin/bash
# A throwaway single-node SLURM on this machine, for the cluster path's test (make test-slurm):
# slurmctld, slurmd and slurmdbd (accounting: submitit asks sacct how array tasks ended) with munge
# and MariaDB, one partition `debug` over this machine's cores. Needs root and Debian's packages.
#   scripts/slurm_sandbox.sh start   install what is missing, configure, start; waits for the node
#   scripts/slurm_sandbox.sh stop    stop the daemons (the packages and configuration stay)
set -euo pipefail
action=${1:-start}
NODE=$(hostname -s)
CONF=/etc/slurm
SPOOL=/var/spool/slurm-sandbox

stop() {
    pkill -x slurmd || true; pkill -x slurmctld || true; pkill -x slurmdbd || true
}

if [ "$action" = stop ]; then stop; exit 0; fi
[ "$action" = start ] || { echo "usage: $0 start|stop" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "error: the SLURM sandbox needs root (apt-get, daemons)" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v slurmdbd >/dev/null || ! command -v mariadbd >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm slurmdbd munge mariadb-server
fi

# munge: the key the daemons authenticate with
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
mkdir -p /run/munge; chown munge:munge /run/munge
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged

# MariaDB: the accounting database
if ! pgrep -x mariadbd >/dev/null; then
    mkdir -p /run/mysqld; chown mysql:mysql /run/mysqld
    (mysqld_safe >/dev/null 2>&1 &)
    for _ in $(seq 60); do mysqladmin ping >/dev/null 2>&1 && break; sleep 1; done
fi
mysql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db; CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'sandbox';
          GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"

mkdir -p "$SPOOL/ctld" "$SPOOL/d" /var/log/slurm
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > "$CONF/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=sandbox
StorageLoc=slurm_acct_db
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
EOF
chmod 600 "$CONF/slurmdbd.conf"
cat > "$CONF/slurm.conf" <<EOF
ClusterName=sandbox
SlurmctldHost=$NODE
AuthType=auth/munge
SlurmUser=root
StateSaveLocation=$SPOOL/ctld
SlurmdSpoolDir=$SPOOL/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/none
KillWait=30
NodeName=$NODE CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

pgrep -x slurmdbd >/dev/null || slurmdbd
for _ in $(seq 30); do sacctmgr -i show cluster >/dev/null 2>&1 && break; sleep 1; done
sacctmgr -i add cluster sandbox >/dev/null 2>&1 || true
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 60); do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
    case "$state" in idle*|mix*|alloc*) echo "SLURM sandbox up: node $NODE ($CPUS CPUs, ${MEM_MB} MB), partition debug"; exit 0;; esac
    sleep 1
done
echo "error: the SLURM sandbox did not come up (node state '${state:-none}'; see /var/log/slurm/)" >&2
exit 1
