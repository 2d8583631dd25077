#!/usr/bin/perl
#
# The packages under a real systemd: an upgrade while the worker is
# crediting, a removal, and Debian's node-exporter reading what the units
# write.  systemd runs as PID 1 of a container made here (a private mount,
# PID, UTS and IPC namespace over an overlay of this machine's root, so
# nothing it installs or starts touches the machine), booted into a target
# that starts only what the test enables.  Inside it, the previous
# release's package (t/compat/previous-release, built from this
# repository's history), set up the way docs/operations.md says: a Debian
# PostgreSQL cluster, the release's migrations, login roles,
# /etc/mt5credit, its worker enabled.  Then two upgrades, each during a
# balance call: from the release to this tree, in the order of
# docs/operations.md ("Upgrades": this tree's migrations first, with the
# release's worker running, then the package, the administrator's
# configuration kept), and from this tree to itself under a higher
# version (this tree's maintainer scripts on both sides, as the next
# release's upgrade runs them).  Impossible:
#   - an upgrade that stops the enabled services and starts none (what
#     dh_installsystemd --no-start did under compat 13, issue 31), or
#     leaves one running the replaced binary
#   - the release's worker stopping on this tree's schema, or this tree's
#     worker refusing the release's configuration
#   - an upgrade in the middle of a balance call losing or doubling it:
#     SIGTERM finishes the call in flight and records it; every payment
#     paid before, during and after the upgrade is one deal in MT5
#   - an upgrade that enables or starts a unit the administrator had not
#   - "apt remove" leaving the worker or the timer running
#   - the worker's and the status timer's textfiles not reaching Debian's
#     node-exporter from inside their sandboxes (ProtectSystem=strict), or
#     the worker's series without its worker label
#   - docs/operations.md's setup steps failing when followed
#
# Run by t/run-tests as the user who started it (root in CI).  Needs root
# (namespaces, mounts, dpkg inside the container): without it, skipped,
# and under CI=true that is a failure.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(WNOHANG);
use Test::More;
use Time::HiRes qw(sleep time);

use lib dirname(__FILE__) . '/../lib';
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Command qw(run);
use Mt5Credit::Mt5Sim;        # write_certs only
use Mt5Credit::Sandbox;     # free_port only: its sandbox is not for root

my $ROOT = abs_path(dirname(__FILE__) . '/../..');
my $DEB = "$ROOT/build/deb";
my $SIM = "$ROOT/build/t/mt5sim";
my $JSON = JSON::PP->new->canonical;

sub need {
    my ($why) = @_;
    if ($ENV{CI}) {
        fail("systemd container: $why");
        done_testing();
        exit 1;
    }
    plan skip_all => $why;
}

need('needs root: namespaces, an overlay mount, dpkg in the container')
    unless $> == 0;
my ($pkg) = glob("$DEB/mt5credit_*_amd64.deb");
need("no package in $DEB: make deb") unless $pkg && -f $pkg;
need("no simulator at $SIM: make sim") unless -x $SIM;
need('prometheus-node-exporter is not installed: make deps')
    unless -x '/usr/bin/prometheus-node-exporter';
need('unshare or nsenter is missing')
    unless -x '/usr/bin/unshare' && -x '/usr/bin/nsenter';

sub write_file {
    my ($path, $text, $mode) = @_;
    make_path(dirname($path));
    open my $fh, '>', $path or die "$path: $!";
    print $fh $text;
    close $fh or die "$path: $!";
    chmod $mode, $path if defined $mode;
    return $path;
}

sub wait_until {
    my ($what, $timeout, $cond) = @_;
    my $until = time + $timeout;
    while (time < $until) {
        my $v = $cond->();
        return $v if $v;
        sleep 0.2;
    }
    diag "timed out ($timeout s): $what";
    return;
}

# --- the container -----------------------------------------------------------------

my $T = tempdir('mt5credit-systemd-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $T;
make_path("$T/upper/etc/systemd/system", "$T/work", "$T/root");

# what it boots into: the basic system and what the test enables, nothing
# of this machine's own services
write_file("$T/upper/etc/systemd/system/mt5test.target", <<'UNIT');
[Unit]
Description=mt5-credit test: the basic system and what the test enables
Requires=basic.target
After=basic.target
AllowIsolate=yes
UNIT

write_file("$T/upper/etc/hostname", "mt5test\n");

my $R = "$T/root";
my $boot = <<"SH";
set -e
mount -t overlay overlay -o lowerdir=/,upperdir=$T/upper,workdir=$T/work $R
mount -t proc proc $R/proc
mount --rbind /sys $R/sys
mount --rbind /dev $R/dev
mount -t tmpfs -o mode=0755 tmpfs $R/run
# the tree (its simulator) wherever it is: another mount is not in the
# overlay
mkdir -p $R$ROOT
mount --bind $ROOT $R$ROOT
mount -o remount,ro,bind $R$ROOT
hostname mt5test
cd $R
mkdir -p oldroot
pivot_root . oldroot
umount -l /oldroot
exec env -i container=mt5test PATH=/usr/sbin:/usr/bin:/sbin:/bin \\
    /lib/systemd/systemd --system --unit=mt5test.target \\
    --log-target=console --show-status=false
SH

my $upid = fork // die "fork: $!";
if ($upid == 0) {
    setpgrp(0, 0);
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', "$T/boot.log";
    open STDERR, '>&', \*STDOUT;
    exec 'unshare', '--mount', '--pid', '--fork', '--uts', '--ipc',
         '--propagation', 'private', 'sh', '-c', $boot;
    exit 127;
}
my $pid1;

# a signal (an interrupted run, prove's pipe closed) still runs END: a
# container left behind keeps its worker running as mt5credit
$SIG{$_} = sub { exit 130 } for qw(INT TERM HUP PIPE);

END {
    # PID 1 of a namespace takes every process in it along, and its
    # mounts go with the namespace
    my $rc = $?;
    if ($upid) {
        kill 'KILL', $pid1 if $pid1;
        kill 'KILL', -$upid;
        waitpid($upid, 0);
    }
    $? = $rc;
}

wait_until('the container\'s systemd', 30, sub {
    ($pid1) = `pgrep -P $upid` =~ /(\d+)/;
    return $pid1 && readlink("/proc/$pid1/exe") // '' =~ /systemd$/
        ? $pid1 : undef;
}) or BAIL_OUT("no systemd came up:\n" . `cat $T/boot.log`);
my $C = "/proc/$pid1/root";     # the container's file system, from here

sub inside {
    my (@cmd) = @_;
    return run('nsenter', '-t', $pid1, '-m', '-p', '-u', '-i', '--',
               '/usr/bin/env', '-i', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
               'LANG=C.UTF-8', 'SYSTEMD_PAGER=', @cmd);
}

sub inside_ok {
    my ($what, @cmd) = @_;
    my ($rc, $out) = inside(@cmd);
    is($rc, 0, $what) or diag "@cmd:\n$out";
    return $out;
}

my ($rc, $out);
wait_until('the boot', 60, sub {
    ($rc, $out) = inside('systemctl', 'is-system-running');
    return $out =~ /^(running|degraded)/;
});
like($out, qr/^running/, 'systemd is PID 1 of the container and the boot '
     . 'finished with no failed unit') or diag `cat $T/boot.log`,
    (inside('systemctl', '--failed', '--no-legend'))[1];

sub unit_prop {
    my ($unit, $prop) = @_;
    my ($rc, $out) = inside('systemctl', 'show', '-p', $prop, '--value',
                            $unit);
    chomp $out;
    return $out;
}

# --- the simulator: MT5 for the container, HTTPS on this machine's loopback ---------

my $sim_port = Mt5Credit::Sandbox::free_port();
my $sim_ctl = Mt5Credit::Sandbox::free_port();
my $tls = "$C/etc/mt5sim/tls";
Mt5Credit::Mt5Sim::write_certs($tls);
write_file("$C/etc/mt5sim/config.json", $JSON->encode({
    server_offset_minutes => 120,
    total_key => 'total',
    managers => [{ login => 1000, password => 'Password1',
                   accountant => JSON::PP::true, groups => ['real\\*'] }],
    groups => [{ group => 'real\\usd', currency => 'USD',
                 currency_digits => 2 }],
    accounts => [{ login => 71001, group => 'real\\usd', balance => '0.00',
                   credit => '0.00', rights => 1, leverage => 100 }],
}));
make_path("$C/var/lib/mt5sim");
inside_ok('the simulator runs as a transient unit',
          'systemd-run', '--unit=mt5sim', '--quiet', $SIM,
          '--config', '/etc/mt5sim/config.json', '--state', '/var/lib/mt5sim',
          '--port', $sim_port, '--control-port', $sim_ctl,
          '--tls-cert', '/etc/mt5sim/tls/server.pem',
          '--tls-key', '/etc/mt5sim/tls/server.key', '--no-fsync');

my $http = HTTP::Tiny->new(timeout => 10);
sub sim {
    my ($method, $path, $body) = @_;
    my $r = $http->request($method, "http://127.0.0.1:$sim_ctl$path",
        { defined $body ? (content => $JSON->encode($body)) : (),
          headers => { 'Content-Type' => 'application/json' } });
    die "simulator $method $path: $r->{status} $r->{content}\n"
        unless $r->{success};
    return $JSON->decode($r->{content});
}
wait_until('the simulator', 30, sub { eval { sim(GET => '/control/stats') } })
    or BAIL_OUT('the simulator did not start: '
                . (inside('journalctl', '-u', 'mt5sim', '--no-pager'))[1]);

# --- the previous version, installed and set up as docs/operations.md says -----------

# a container image's policy-rc.d (Docker's "exit 101") forbids every
# start, stop and restart of a maintainer script; a host has none
if (-e "$C/usr/sbin/policy-rc.d") {
    inside_ok('the image\'s policy-rc.d removed, as on a host', 'rm',
              '/usr/sbin/policy-rc.d');
}

# Three versions, so dpkg runs two real upgrades:
#   - the previous release (t/compat/previous-release), built here from
#     this repository's history with its own Makefile and debian/: what a
#     host runs today.  This tree has not bumped VERSION since, so the
#     release's package says the same version; it is repacked under a
#     lower one ("~0rel"), its scripts and files untouched;
#   - this tree's package under a lower version ("~prev1"), so that the
#     second upgrade runs this tree's scripts on both sides (the prerm of
#     the old, the postinst of the new): the next release's upgrade;
#   - this tree's package as built.
my ($version) = `dpkg-deb -f $pkg Version` =~ /(\S+)/;
my ($rel_version, $rel_commit) = do {
    open my $fh, '<', "$ROOT/t/compat/previous-release"
        or die "t/compat/previous-release: $!";
    my %r = map { /^(version|commit)\s+(\S+)\s*$/ ? ($1 => $2) : () } <$fh>;
    ($r{version}, $r{commit});
};
need('not a git clone with the previous release in its history '
     . "($rel_commit): a shallow clone cannot build it")
    unless system("git -C $ROOT cat-file -e $rel_commit^{commit} "
                  . '2>/dev/null') == 0;
my $rel_src = "$T/release";
($rc, $out) = run('sh', '-c', "set -e; mkdir -p $rel_src; "
                  . "git -C $ROOT archive $rel_commit | tar -x -C $rel_src; "
                  . "cd $rel_src; MT5CREDIT_COMMIT=$rel_commit make deb");
is($rc, 0, "the previous release $rel_version ($rel_commit) built from the "
   . 'history: make deb') or diag substr($out, -3000);
my $prev_version = "$version~prev1";
($rc, $out) = run('sh', '-c', "set -e; "
                  . "repack() { d=$T/repack; rm -rf \$d; dpkg-deb -R \$1 \$d; "
                  . "sed -i \"s/^Version: .*/Version: \$2/\" "
                  . "\$d/DEBIAN/control; dpkg-deb -b -Zxz \$d \$3; }; "
                  . "repack $rel_src/build/deb/mt5credit_${rel_version}_amd64.deb "
                  . "$version~0rel $C/tmp/mt5credit-release.deb; "
                  . "repack $pkg $prev_version $C/tmp/mt5credit-prev.deb; "
                  . "cp $pkg $C/tmp/mt5credit-new.deb");
is($rc, 0, "... repacked as $version~0rel; this tree's as $prev_version")
    or diag $out;

inside_ok("dpkg -i mt5credit $rel_version, the release",
          'dpkg', '-i', '/tmp/mt5credit-release.deb');
is(unit_prop('mt5credit-worker.service', 'UnitFileState'), 'disabled',
   '... its units installed, not enabled');
is(unit_prop('mt5credit-worker.service', 'ActiveState'), 'inactive',
   '... nor started');

# PostgreSQL, the Debian way: a cluster of its own, on a free port
my $pg_port = Mt5Credit::Sandbox::free_port();
inside_ok('a PostgreSQL 15 cluster', 'pg_createcluster', '15', 'mt5',
          '-p', $pg_port);
inside_ok('... started by its unit', 'systemctl', 'start',
          'postgresql@15-mt5.service');

sub psql {
    my ($sql, %v) = @_;
    my $f = "/tmp/q-" . int(rand(1e9)) . '.sql';
    write_file("$C$f", $sql, 0644);
    my ($rc, $out) = inside('runuser', '-u', 'postgres', '--', 'psql', '-X',
        '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-p', $pg_port,
        '-d', $v{db} // 'mt5credit',
        (map { ('-v', "$_=$v{$_}") } grep { $_ ne 'db' } sort keys %v),
        '-f', $f);
    unlink "$C$f";
    die "psql: $out\n$sql\n" if $rc;
    chomp $out;
    return $out;
}

psql('CREATE DATABASE mt5credit', db => 'postgres');
inside_ok('migrate, from the release\'s package, as the docs say',
          'runuser', '-u', 'postgres', '--',
          '/usr/share/mt5credit/sql/migrate', '-p', $pg_port,
          '-d', 'mt5credit', '-h', '/run/postgresql');

# step 2's login roles, exactly as docs/operations.md writes them (the
# passwords filled in)
my ($roles) = do {
    local $/;
    open my $fh, '<', "$ROOT/docs/operations.md" or die;
    <$fh> =~ /^2\. Login roles.*?```sql\n(.*?)```/ms;
};
ok($roles, 'docs/operations.md: the login roles of step 2');
(my $roles_sql = $roles // '') =~ s/PASSWORD '\.\.\.'/PASSWORD 'pw-test'/g;
$roles_sql =~ s/^\s+//mg;
is(eval { psql($roles_sql); 1 }, 1, '... created as written')
    or diag $@;
my ($worker_role) = ($roles // '') =~ /CREATE ROLE (\S+)\s+LOGIN[^;]*IN ROLE mt5credit_worker;/;
ok($worker_role, "... one of them the worker's: " . ($worker_role // '?'));
$worker_role //= 'none';

# step 7's deployment tag, as written
my ($tag_sql) = do {
    local $/;
    open my $fh, '<', "$ROOT/docs/operations.md" or die;
    <$fh> =~ /^7\. Give the database its deployment tag.*?```sql\n(.*?)```/ms;
};
($tag_sql //= '') =~ s/^\s+//mg;
like($tag_sql, qr/INSERT INTO mt5credit\.deployment/,
     'docs/operations.md: step 7, the deployment tag');
is(eval { psql($tag_sql); 1 }, 1, '... given as written') or diag $@;
psql(q{SET ROLE mt5credit_portal;
       SELECT mt5credit.register_account('alice', 'live1', 71001, 'USD');});

# /etc/mt5credit: the secrets (0600, the service's user) and the
# configuration, the package's example with this deployment's values
write_file("$C/etc/mt5credit/live1.password", "Password1\n", 0600);
write_file("$C/etc/mt5credit/worker.pgpass",
           "127.0.0.1:$pg_port:mt5credit:$worker_role:pw-test\n", 0600);
($rc, $out) = run('cp', "$tls/ca.pem", "$C/etc/mt5credit/live1-ca.pem");
inside_ok('the secrets belong to the service\'s user', 'chown',
          'mt5credit:mt5credit', '/etc/mt5credit/live1.password',
          '/etc/mt5credit/worker.pgpass');
my $conf = do { local $/; open my $fh, '<', "$C/etc/mt5credit/mt5credit.conf"
                          or die; <$fh> };
my %set = (
    database => qq{"host=127.0.0.1 port=$pg_port dbname=mt5credit }
              . qq{user=$worker_role passfile=/etc/mt5credit/worker.pgpass"},
    deployment_tag => 'prod',
    call_timeout => 5, lease => 30, poll_interval => 1,
    resolve_interval => 1, sweep_interval => 1, settle_margin => 1,
    url => "https://127.0.0.1:$sim_port", manager => 1000,
);
for my $k (sort keys %set) {
    $conf =~ s/^#?\Q$k\E = .*$/$k = $set{$k}/m
        or $conf =~ s/^(\[server )/$k = $set{$k}\n\n$1/m;
}
$conf =~ s/^(redis|alert_command) = .*\n//mg;
write_file("$C/etc/mt5credit/mt5credit.conf.new", $conf);
inside_ok('mt5credit.conf edited in place (its mode and group kept)', 'sh',
          '-c', 'cat /etc/mt5credit/mt5credit.conf.new '
              . '> /etc/mt5credit/mt5credit.conf && '
              . 'rm /etc/mt5credit/mt5credit.conf.new');

# node-exporter: Debian's package and unit, on a free port, and its
# textfile directory given to the service's group (docs/observability.md)
my $nx_port = Mt5Credit::Sandbox::free_port();
write_file("$C/etc/default/prometheus-node-exporter",
           qq{ARGS="--web.listen-address=127.0.0.1:$nx_port }
         . qq{--collector.disable-defaults --collector.textfile"\n});
inside_ok('docs/observability.md: the textfile directory writable by '
          . 'group mt5credit', 'sh', '-c',
          'chgrp mt5credit /var/lib/prometheus/node-exporter && '
        . 'chmod 0775 /var/lib/prometheus/node-exporter');
inside_ok('node-exporter started by its unit', 'systemctl', 'start',
          'prometheus-node-exporter.service');

inside_ok('enable --now the release\'s worker', 'systemctl', 'enable',
          '--now', 'mt5credit-worker.service');
wait_until('the worker running', 30, sub {
    unit_prop('mt5credit-worker.service', 'ActiveState') eq 'active' });
my $rel_pid = unit_prop('mt5credit-worker.service', 'MainPID');
ok($rel_pid > 0, "the release's worker runs (pid $rel_pid in the container)")
    or diag((inside('journalctl', '-u', 'mt5credit-worker', '--no-pager'))[1]);

# --- payments, before, during and after the upgrade ---------------------------------

my $seq = 0;
sub pay {
    my $n = ++$seq;
    my $dep = psql(q{SET ROLE mt5credit_portal;
        SELECT reference FROM mt5credit.create_deposit('alice', :'k',
            'stripe', 'live1', 71001, 1000 + :n, 'USD');},
        k => "systemd-$n", n => $n);
    my $body = stripe_event(deposit => $dep, amount => 1000 + $n,
                            pi => "pi_systemd_$n");
    my ($ev) = $body =~ /"id": "(evt_[^"]+)"/;
    my $r = psql(q{SET ROLE mt5credit_ingest;
        SELECT outcome FROM mt5credit.ingest('stripe', :'ev',
            convert_to(:'body', 'UTF8'), 'stripe',
            extract(epoch FROM now())::bigint);}, ev => $ev, body => $body);
    return $r;
}

sub count_status {
    my ($status) = @_;
    return psql(q{SELECT count(*) FROM mt5credit.mt5_credit
                  WHERE status = :'s'}, s => $status);
}

# every balance call takes 1.5 s: each upgrade comes while one is in flight
sim(POST => '/control/fault', { kind => 'latency', ms => 1500, count => 0,
                                endpoint => '/api/trade/balance' });

# --- the first upgrade: from the release, the order docs/operations.md gives ---

my @outcomes = map { pay() } 1 .. 3;
wait_until('a credit done by the release\'s worker and the next in flight',
           60, sub { count_status('done') >= 1
                     && count_status('claimed') >= 1 });

# expand: this tree's migrations first, from its package, while the
# release's worker is in a call
inside_ok('this tree\'s package unpacked for its migrations', 'dpkg-deb',
          '-x', '/tmp/mt5credit-prev.deb', '/tmp/next');
inside_ok('migrate first, the release\'s worker in a call: this tree\'s '
          . 'migrations', 'runuser', '-u', 'postgres', '--',
          '/tmp/next/usr/share/mt5credit/sql/migrate', '-p', $pg_port,
          '-d', 'mt5credit', '-h', '/run/postgresql');
is(psql(q{SELECT count(*) FROM mt5credit.schema_migration
          WHERE version = 73}), 1, '... the schema is this tree\'s');
push @outcomes, pay();
is(unit_prop('mt5credit-worker.service', 'MainPID'), $rel_pid,
   '... and the release\'s worker goes on, on the new schema');

# then the binaries: apt keeps the administrator's mt5credit.conf, as
# unattended upgrades do (the release's keys are still this tree's)
inside_ok("the upgrade from $rel_version: dpkg -i, the administrator's "
          . 'configuration kept', 'dpkg', '--force-confdef',
          '--force-confold', '-i', '/tmp/mt5credit-prev.deb');
my $old_pid = wait_until('the worker restarted', 60, sub {
    my $p = unit_prop('mt5credit-worker.service', 'MainPID');
    return $p > 0 && $p != $rel_pid
        && unit_prop('mt5credit-worker.service', 'ActiveState') eq 'active'
        ? $p : undef;
});
ok($old_pid, "the upgrade from the release restarted its enabled worker: "
   . "pid $rel_pid, now " . ($old_pid // 'none'));
is(unit_prop('mt5credit-worker.service', 'NRestarts'), 0,
   '... a restart by the upgrade, not by a crash');
my @exe1 = stat("$C/proc/" . ($old_pid // 0) . '/exe');
my @bin1 = stat("$C/usr/bin/mt5credit");
ok(@exe1 && @bin1 && $exe1[1] == $bin1[1] && $exe1[0] == $bin1[0],
   '... on the installed binary');
push @outcomes, pay();
wait_until('the first five payments credited', 60, sub {
    count_status('done') == 5 });
is(count_status('done'), 5, 'the five payments made around the first '
   . 'upgrade credited, none left unknown or failed');

# what the release had not: its textfiles, read by node-exporter, and the
# status timer; the administrator turns them on
(my $with_metrics = do { local $/; open my $fh, '<',
                         "$C/etc/mt5credit/mt5credit.conf" or die; <$fh> })
    =~ s/^(\[server )/metrics_dir = \/var\/lib\/prometheus\/node-exporter\n\n$1/m;
write_file("$C/etc/mt5credit/mt5credit.conf.new", $with_metrics);
inside_ok('metrics_dir set in mt5credit.conf', 'sh', '-c',
          'cat /etc/mt5credit/mt5credit.conf.new '
              . '> /etc/mt5credit/mt5credit.conf && '
              . 'rm /etc/mt5credit/mt5credit.conf.new');
inside_ok('enable --now the status timer', 'systemctl', 'enable', '--now',
          'mt5credit-status-textfile.timer');
inside_ok('the worker restarted to read it', 'systemctl', 'restart',
          'mt5credit-worker.service');
$old_pid = wait_until('the worker running again', 30, sub {
    my $p = unit_prop('mt5credit-worker.service', 'MainPID');
    return $p > 0 && $p != $old_pid ? $p : undef });
ok($old_pid, "... pid " . ($old_pid // 'none'));

# --- the second upgrade: this tree's scripts on both sides ---------------------------

my $before = count_status('done');
push @outcomes, map { pay() } 1 .. 6;
is(scalar(grep { /credit/ } @outcomes), 11, 'eleven payments stored, each '
   . 'with its credit') or diag "@outcomes";

wait_until('a credit done and the next in flight', 60, sub {
    count_status('done') >= $before + 2 && count_status('claimed') >= 1 });
my $in_flight = count_status('claimed');
ok($in_flight >= 1, "a balance call in flight ($in_flight claimed) when the "
   . 'upgrade starts');

my $t0 = time;
my $up = inside_ok("apt's upgrade to $version: dpkg -i, while the worker "
                   . 'is in a call', 'dpkg', '-i', '/tmp/mt5credit-new.deb');
my $took = time - $t0;
push @outcomes, map { pay() } 1 .. 4;

my $new_pid = wait_until('the worker restarted', 60, sub {
    my $p = unit_prop('mt5credit-worker.service', 'MainPID');
    return $p > 0 && $p != $old_pid
        && unit_prop('mt5credit-worker.service', 'ActiveState') eq 'active'
        ? $p : undef;
});
ok($new_pid, "the upgrade restarted the enabled worker: pid $old_pid, now "
   . ($new_pid // 'none') . sprintf(' (dpkg took %.1f s)', $took));
is(unit_prop('mt5credit-worker.service', 'NRestarts'), 0,
   '... a restart by the upgrade, not by a crash');
my @exe = stat("$C/proc/" . ($new_pid // 0) . '/exe');
my @bin = stat("$C/usr/bin/mt5credit");
ok(@exe && @bin && $exe[1] == $bin[1] && $exe[0] == $bin[0],
   '... and it runs the installed binary, not the replaced one');
my $got_version = (inside("dpkg-query", "-W", "-f", q{${Version}}, "mt5credit"))[1];
is($got_version,
   $version, "... of version $version");

my $journal = (inside('journalctl', '-u', 'mt5credit-worker.service',
                      '--no-pager', '-o', 'cat'))[1];
like($journal, qr/worker \S+ stopping: [1-9]\d* done/,
     'the old worker finished its call and said so before it stopped (SIGTERM)')
    or diag substr($journal, -4000);
# the call in flight when SIGTERM came: made, and recorded by the worker
# that made it, before it stopped
my @old = grep { /\[\Q$old_pid\E\]/ } split /\n/, $journal;
my ($last) = map { /credit=(\d+) .*trade\/balance/ ? $1 : () } reverse @old;
ok($last && grep({ /credit=\Q$last\E .*: deal \d+, done/ } @old),
   'the call in flight at SIGTERM (credit ' . ($last // '?') . ') recorded '
   . 'done by the worker that made it');
unlike($journal, qr/credit=\d+[^\n]*\bunknown\b|killed|SIGKILL|timed out/i,
       '... no call left unknown, nothing killed') or diag substr($journal, -4000);

for my $u (qw(mt5credit-status-textfile.timer)) {
    is(unit_prop($u, 'ActiveState'), 'active', "$u still active after the "
       . 'upgrade');
}
for my $u (qw(mt5credit-payout.service mt5credit-poll-provider.service)) {
    is(unit_prop($u, 'ActiveState') . '/' . unit_prop($u, 'UnitFileState'),
       'inactive/disabled', "$u: not enabled, so the upgrade started nothing");
}

my $paid = scalar @outcomes;
wait_until('every credit done', 90, sub { count_status('done') == $paid });
is(count_status('done'), $paid, "all $paid payments credited")
    or diag psql(q{SELECT string_agg(id || ' ' || status, ', ')
                   FROM mt5credit.mt5_credit}),
            (inside('journalctl', '-u', 'mt5credit-worker.service',
                    '--no-pager', '-o', 'cat', '-n', '40'))[1];
is(psql(q{SELECT count(*) FROM mt5credit.mt5_credit
          WHERE status <> 'done'}), 0, '... none unknown, failed or pending');
my %deals;
$deals{ $_->{Comment} }++ for grep { $_->{Login} == 71001 }
                              @{ sim(GET => '/control/ledger')->{deals} };
is(scalar(keys %deals), $paid, "MT5 holds $paid deals, one comment each");
is(scalar(grep { $_ != 1 } values %deals), 0, '... none twice')
    or diag explain \%deals;
is(psql(q{SELECT count(*) FROM mt5credit.mt5_credit c
          WHERE c.mt5_deal_ticket IS NULL}), 0,
   '... and every credit records its ticket');
is(psql(q{SELECT count(*) FROM mt5credit."case"
          WHERE resolved_at IS NULL}), 0, 'no case opened');

# --- node-exporter reads what the units wrote ----------------------------------------

my $scrape = '';
wait_until('both textfiles scraped', 60, sub {
    my $r = $http->get("http://127.0.0.1:$nx_port/metrics");
    $scrape = $r->{success} ? $r->{content} : '';
    return $scrape =~ /^mt5credit_status_timestamp_seconds/m
        && $scrape =~ /^mt5credit_credits\{kind="deposit",status="done"\} $paid$/m
        && $scrape =~ /^mt5credit_worker_\w+\{worker="mt5test:\d+"/m;
});
like($scrape, qr/^mt5credit_status_timestamp_seconds \S+$/m,
     'node-exporter serves the status timer\'s textfile, with its stamp');
like($scrape, qr/^mt5credit_credits\{kind="deposit",status="done"\} $paid$/m,
     "... and what it read: $paid deposits done");
like($scrape, qr/^mt5credit_worker_\w+\{worker="mt5test:\Q$new_pid\E"/m,
     '... and the new worker\'s own series, labelled with its worker name');
like($scrape, qr/^node_textfile_scrape_error 0$/m,
     '... with no textfile error (no collision, nothing unreadable)');
my @files = $scrape =~ /^node_textfile_mtime_seconds\{file="([^"]+)"\}/mg;
ok((grep { $_ =~ /mt5credit\.prom$/ } @files),
   "the status textfile's age is there for the staleness alert: @files");
is(join(' ', map { m{(mt5credit-work-[^/]+)$} ? $1 : () } sort @files),
   "mt5credit-work-mt5test_" . ($new_pid // '?') . '.prom',
   '... and the worker\'s: the new process\'s only, the stopped one took '
   . 'its file along (its stamp would have frozen, and paged)');

# --- apt remove ---------------------------------------------------------------------

inside_ok('apt remove: dpkg -r mt5credit', 'dpkg', '-r', 'mt5credit');
for my $u (qw(mt5credit-worker.service mt5credit-status-textfile.timer)) {
    is(unit_prop($u, 'ActiveState'), 'inactive', "$u stopped by the removal");
}
($rc, $out) = inside('pgrep', '-x', 'mt5credit');
isnt($rc, 0, 'no mt5credit process left in the container') or diag $out;

done_testing();
