package Mt5Credit::Sandbox;

# Real PostgreSQL, Redis and nginx on loopback ports in a temp dir, for one
# test file.  Everything started here is stopped when the sandbox goes out
# of scope, when the test dies, and on SIGINT/SIGTERM: a failing test never
# leaves a server behind.
#
# PostgreSQL refuses to run as root; the test runner (t/run-tests) drops
# to an unprivileged user first, and this module refuses root outright.

use strict;
use warnings;

use Carp qw(croak);
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

our $ROOT = abs_path(dirname(__FILE__) . '/../../..')
    // die "the tree's path cannot be resolved from " . __FILE__
         . " (a directory this user cannot read? t/run-as-tester copies "
         . "a tree out of its reach)\n";
our $PGBIN = '/usr/lib/postgresql/15/bin';
# a relative NGINX_BIN is in the tree (t/run-as-tester may run a copy)
our $NGINX = $ENV{NGINX_BIN} || '/usr/sbin/nginx';
$NGINX = "$ROOT/$NGINX" unless $NGINX =~ m{^/};
our $MODULE = $ENV{MT5CREDIT_MODULE} || "$ROOT/build/ngx_mt5_credit_module.so";
our $VECTORS = "$ROOT/t/vectors";     # copied in, see its README.md

my @LIVE;    # sandboxes to tear down on a signal

# PIPE too: a reader of the test's output that goes away (prove | head)
# must not leave servers running
for my $sig (qw(INT TERM HUP PIPE)) {
    $SIG{$sig} = sub { $_->teardown for @LIVE; exit 130 };
}

sub new {
    my ($class, %opt) = @_;

    croak "run the tests as an unprivileged user (t/run-tests does)"
        if $> == 0;

    my $keep = $ENV{MT5CREDIT_KEEP} ? 1 : 0;
    my $dir = tempdir('mt5credit-XXXXXX', TMPDIR => 1, CLEANUP => !$keep);

    my $self = bless {
        dir     => $dir,
        keep    => $keep,
        pids    => {},
        db      => 'mt5credit',
        owner   => $$,
        %opt,
    }, $class;

    push @LIVE, $self;
    return $self;
}

sub dir { $_[0]{dir} }

# A free TCP port on 127.0.0.1, for a server to listen on.  Chosen outside
# the kernel's ephemeral range: a port taken from inside it could be
# handed to some outgoing connection (the soak makes thousands) before
# our server binds it.  Bound and released: a race with another test
# remains possible, but rare (random, and never the same port twice in
# one process), and a server start that loses it fails loudly.
my %GIVEN;

sub free_port {
    my ($lo, $hi) = (10000, 32767);
    if (open my $f, '<', '/proc/sys/net/ipv4/ip_local_port_range') {
        my ($elo, $ehi) = split ' ', scalar <$f>;
        ($lo, $hi) = $elo > 12000 ? (10000, $elo - 1) : ($ehi + 1, 65535);
    }
    for (1 .. 500) {
        my $port = $lo + (int(rand($hi - $lo + 1)) + $$ * 7919)
                         % ($hi - $lo + 1);
        next if $GIVEN{$port};
        my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                      LocalPort => $port, Proto => 'tcp',
                                      ReuseAddr => 1)
            or next;
        close $s;
        $GIVEN{$port} = 1;
        return $port;
    }
    croak "no free port in $lo-$hi";
}

sub wait_port {
    my ($port, $what, $timeout) = @_;
    my $until = time + ($timeout || 30);
    while (time < $until) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $port, Proto => 'tcp');
        if ($s) { close $s; return 1 }
        sleep 0.05;
    }
    croak "$what did not listen on 127.0.0.1:$port";
}

sub run_cmd {
    my (@cmd) = @_;
    my $out = `@cmd 2>&1`;
    croak "failed ($?): @cmd\n$out" if $?;
    return $out;
}

sub spawn {
    my ($self, $name, @cmd) = @_;
    my $log = "$self->{dir}/$name.out";
    my $pid = fork // croak "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>>', $log or die;
        open STDERR, '>&', \*STDOUT or die;
        setpgrp(0, 0);
        exec @cmd or die "exec @cmd: $!";
    }
    $self->{pids}{$name} = $pid;
    return $pid;
}

sub reap {
    my ($self, $name, $signal, $timeout) = @_;
    my $pid = delete $self->{pids}{$name} or return;
    kill $signal, $pid;
    my $until = time + ($timeout || 30);
    while (time < $until) {
        return $? if waitpid($pid, WNOHANG) == $pid;
        sleep 0.05;
    }
    kill 'KILL', $pid;
    waitpid($pid, 0);
    return $?;
}

# ---------------------------------------------------------------- PostgreSQL

sub start_postgres {
    my ($self) = @_;
    my $data = "$self->{dir}/pg";
    my $port = $self->{pg_port} ||= free_port();

    unless (-d $data) {
        run_cmd("$PGBIN/initdb", '-D', $data, '-U', 'mt5', '-A', 'trust',
                '-E', 'UTF8', '--no-sync', '--locale=C.UTF-8');
        open my $fh, '>>', "$data/postgresql.conf" or croak $!;
        print $fh "listen_addresses = '127.0.0.1'\n",
                  "port = $port\n",
                  "unix_socket_directories = '$self->{dir}'\n",
                  # tests need no durability; a benchmark of commits
                  # does (Sandbox->new(fsync => 1))
                  ($self->{fsync} ? "fsync = on\n"
                                  : "fsync = off\nfull_page_writes = off\n"),
                  "max_connections = 200\n",
                  "log_min_messages = warning\n";
        close $fh;
    }

    run_cmd("$PGBIN/pg_ctl", '-D', $data, '-l', "$self->{dir}/pg.log",
            '-w', '-t', '60', 'start');
    $self->{pg_up} = 1;

    unless ($self->{pg_ready}++) {
        run_cmd("$PGBIN/createdb", '-h', '127.0.0.1', '-p', $port, '-U',
                'mt5', $self->{db});
        $self->migrate;
        $self->psql(<<'SQL');
CREATE ROLE edge LOGIN IN ROLE mt5credit_ingest;
CREATE ROLE portal LOGIN IN ROLE mt5credit_portal;
CREATE ROLE worker LOGIN IN ROLE mt5credit_worker;
CREATE ROLE recon LOGIN IN ROLE mt5credit_recon;
CREATE ROLE query LOGIN IN ROLE mt5credit_query;
CREATE ROLE outbound LOGIN IN ROLE mt5credit_outbound;
CREATE ROLE ops_alice LOGIN IN ROLE mt5credit_operator;
CREATE ROLE ops_bob LOGIN IN ROLE mt5credit_operator;
SQL
    }
    return $port;
}

sub stop_postgres {
    my ($self, $mode) = @_;
    return unless $self->{pg_up};
    run_cmd("$PGBIN/pg_ctl", '-D', "$self->{dir}/pg", '-m', $mode || 'fast',
            '-w', 'stop');
    $self->{pg_up} = 0;
}

sub migrate {
    my ($self) = @_;
    return run_cmd("$ROOT/sql/migrate", $self->psql_args);
}

sub pg_port { $_[0]{pg_port} }

sub psql_args {
    my ($self, $user, $port, $db) = @_;
    return ('-h', '127.0.0.1', '-p', $port || $self->{pg_port},
            '-U', $user || 'mt5', '-d', $db || $self->{db});
}

# ---------------------------------------------------------------- a standby

# A streaming standby of the sandbox's PostgreSQL, as a failover needs
# one: "pg_basebackup -R -X stream" of the running primary into
# <dir>/<name>, on its own port (or {port}), its application_name <name>
# (what synchronous_standby_names names).  It streams from the primary,
# or through {via}, a port that relays to it (t/blackhole-proxy.pl: a
# path that can stop carrying WAL).  initdb's pg_hba (-A trust) lets the
# superuser replicate from 127.0.0.1; wal_level replica and
# max_wal_senders 10 are PostgreSQL's defaults.  Stopped at teardown, as
# the primary is.  Returns its port.
sub start_standby {
    my ($self, $name, %opt) = @_;
    croak "a standby needs a running primary" unless $self->{pg_up};
    croak "standby $name exists" if $self->{standby}{$name};
    my $data = "$self->{dir}/$name";
    my $port = $opt{port} || free_port();
    my $via = $opt{via} || $self->{pg_port};

    run_cmd("$PGBIN/pg_basebackup", '-D', $data, '-h', '127.0.0.1',
            '-p', $self->{pg_port}, '-U', 'mt5', '-X', 'stream', '-R',
            '-c', 'fast', '--no-sync');
    # postgresql.auto.conf, after what -R wrote there: its later lines win
    open my $fh, '>>', "$data/postgresql.auto.conf" or croak $!;
    print $fh "port = $port\n",
              "primary_conninfo = 'host=127.0.0.1 port=$via user=mt5 "
              . "application_name=$name'\n",
              # the primary's own, should it have had one, is not its
              "synchronous_standby_names = ''\n";
    close $fh;

    $self->{standby}{$name} = { data => $data, port => $port };
    run_cmd("$PGBIN/pg_ctl", '-D', $data, '-l', "$self->{dir}/$name.log",
            '-w', '-t', '60', 'start');
    $self->{standby}{$name}{up} = 1;
    return $port;
}

sub standby_port { $_[0]{standby}{$_[1]}{port} }

# The primary waits for <name> at every COMMIT (synchronous_commit is on,
# PostgreSQL's default, and pinned by the edge and the batch programs):
# returns once the primary reports it synchronous.
sub synchronous_standby {
    my ($self, $name) = @_;
    $self->psql("ALTER SYSTEM SET synchronous_standby_names = '\"$name\"'");
    $self->psql('SELECT pg_reload_conf()');
    my $until = time + 30;
    while (time < $until) {
        return 1 if ($self->sql1("SELECT sync_state FROM pg_stat_replication "
                                 . "WHERE application_name = '$name'") // '')
                    eq 'sync';
        sleep 0.1;
    }
    croak "standby $name never became synchronous";
}

# Returns once <name> has replayed everything the primary wrote so far.
sub standby_caught_up {
    my ($self, $name) = @_;
    my $lsn = $self->sql1('SELECT pg_current_wal_lsn()');
    my $until = time + 30;
    while (time < $until) {
        return 1 if $self->sql1("SELECT coalesce(replay_lsn >= '$lsn', false) "
                                . "FROM pg_stat_replication WHERE "
                                . "application_name = '$name'") eq 't';
        sleep 0.1;
    }
    croak "standby $name did not catch up with $lsn";
}

# Promotes <name>; from then on the sandbox's database is it: psql,
# sql1 and every conninfo made afterwards name its port.  The old
# primary's start_postgres and stop_postgres still mean the old one
# (which a test must not start again beside it: two primaries).
sub promote_standby {
    my ($self, $name) = @_;
    my $s = $self->{standby}{$name} or croak "no standby $name";
    run_cmd("$PGBIN/pg_ctl", '-D', $s->{data}, '-w', '-t', '60', 'promote');
    $self->{pg_port} = $s->{port};
    return $s->{port};
}

sub stop_standby {
    my ($self, $name, $mode) = @_;
    my $s = $self->{standby}{$name} or return;
    return unless $s->{up};
    run_cmd("$PGBIN/pg_ctl", '-D', $s->{data}, '-m', $mode || 'fast', '-w',
            'stop');
    $s->{up} = 0;
}

# Runs SQL (as the superuser unless {user}); returns rows as arrays of
# fields split on '|'.  Dies on an error unless {may_fail}, in which case
# it returns the error text instead.
sub psql {
    my ($self, $sql, %opt) = @_;
    my $file = "$self->{dir}/q-$$.sql";
    open my $fh, '>', $file or croak $!;
    print $fh $sql;
    close $fh;
    # {port}: another server's (a standby's); {db}: another database
    my @args = $self->psql_args($opt{user}, $opt{port}, $opt{db});
    my $out = `psql -X -q -At -v ON_ERROR_STOP=1 @args -f $file 2>&1`;
    my $failed = $?;
    unlink $file;
    if ($failed) {
        return $out if $opt{may_fail};
        croak "psql failed: $out\nSQL: $sql";
    }
    croak "psql succeeded but should have failed: $sql" if $opt{may_fail}
        && $opt{must_fail};
    return $out if $opt{raw};
    return [ map { [ split /\|/, $_, -1 ] } split /\n/, $out ];
}

# One value.
sub sql1 {
    my ($self, $sql, %opt) = @_;
    my $rows = $self->psql($sql, %opt);
    return $rows->[0][0];
}

# The portal's two calls, as the portal role.  register_account(client,
# login, currency) puts the login on server live1; create_deposit returns
# the deposit's reference.
sub register_account {
    my ($self, $client, $login, $currency) = @_;
    return $self->sql1("SELECT mt5credit.register_account('$client', "
                       . "'live1', $login, '" . ($currency || 'USD') . "')",
                       user => 'portal');
}

my $deposit_seq = 0;

sub create_deposit {
    my ($self, %d) = @_;
    my $key = $d{key} || sprintf('deposit-key-%d-%d', $$, ++$deposit_seq);
    return $self->sql1("SELECT reference FROM mt5credit.create_deposit("
                       . "'$d{client}', '$key', '"
                       . ($d{provider} || 'stripe') . "', 'live1', "
                       . "$d{login}, $d{amount}, '"
                       . ($d{currency} || 'USD') . "')", user => 'portal');
}

# A session kept open, for holding locks while the test does other things.
sub psql_session {
    my ($self) = @_;
    my @args = $self->psql_args;
    my $out = "$self->{dir}/session-" . int(rand(1e9)) . '.out';
    open my $pipe, '|-', "psql -X -q -At @args > $out 2>&1" or croak $!;
    my $old = select $pipe; $| = 1; select $old;
    return Mt5Credit::Sandbox::Session->new($pipe, $out);
}

# ---------------------------------------------------------------- Redis

sub start_redis {
    my ($self) = @_;
    my $port = $self->{redis_port} ||= free_port();
    $self->spawn('redis', 'redis-server', '--port', $port,
                 '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
                 '--dir', $self->{dir}, '--logfile', "$self->{dir}/redis.log");
    wait_port($port, 'redis');
    return $port;
}

sub stop_redis {
    my ($self) = @_;
    $self->reap('redis', 'TERM');
}

sub redis_port { $_[0]{redis_port} }

sub redis_cli {
    my ($self, @cmd) = @_;
    my $out = `redis-cli -h 127.0.0.1 -p $self->{redis_port} @cmd 2>&1`;
    chomp $out;
    return $out;
}

# ---------------------------------------------------------------- nginx

# $body goes inside http { }; %%PORT%%, %%DIR%%, %%PG%% (a conninfo for
# the edge role), %%REDIS%% are replaced.  Main-level extras via {main}.
sub nginx_conf {
    my ($self, $http, %opt) = @_;
    my $dir = $self->{dir};
    my $port = $self->{nginx_port} ||= free_port();
    my $workers = $opt{workers} || 1;
    my $master = $opt{single} ? 'off' : 'on';   # single: for valgrind
    my $main = $opt{main} || '';
    # info, as production runs: nginx's own debug level logs every request
    # header, signatures included (MT5CREDIT_LOG_LEVEL=debug to diagnose)
    my $level = $ENV{MT5CREDIT_LOG_LEVEL} || 'info';
    # MT5CREDIT_MODULE=static: nginx built with the module inside;
    # Sandbox->new(module => path): another build's (t/93: the previous
    # release's edge)
    my $module = $self->{module} || $MODULE;
    my $load = $module eq 'static' ? '' : "load_module $module;";
    my $temp = nginx_temp_paths($dir);
    my $conf = <<"CONF";
$load
daemon off;
master_process $master;
worker_processes $workers;
error_log $dir/error.log $level;
pid $dir/nginx.pid;
$main
events { worker_connections 1024; }
http {
    access_log $dir/access.log;
$temp
$http
}
CONF
    my $pg = "host=127.0.0.1 port=" . ($self->{pg_port} || 1)
           . " dbname=$self->{db} user=edge";
    my $redis = '127.0.0.1:' . ($self->{redis_port} || 1);
    $conf =~ s/%%PORT%%/$port/g;
    $conf =~ s/%%DIR%%/$dir/g;
    $conf =~ s/%%PG%%/$pg/g;
    $conf =~ s/%%PGPORT%%/$self->{pg_port} || 1/ge;
    $conf =~ s/%%REDIS%%/$redis/g;
    return $conf;
}

# http{} lines that keep nginx's temp files in $dir.  Without them nginx
# (even "nginx -t") creates the packaged defaults under /var/lib/nginx,
# which a fresh install leaves to root: the tester may not.
sub nginx_temp_paths {
    my ($dir) = @_;
    return join '', map { "    $_->[0]_temp_path $dir/$_->[1];\n" }
        [ 'client_body', 'body' ], [ 'proxy', 'proxy' ],
        [ 'fastcgi', 'fastcgi' ], [ 'uwsgi', 'uwsgi' ], [ 'scgi', 'scgi' ];
}

# The money journal's witness (mt5credit audit, sql/081): an Ed25519 key
# pair in <dir>/witness, kept apart from the database's files, and a
# login for the auditor's role.  Returns the witness directory.
sub audit_witness {
    my ($self, $login) = @_;
    my $w = "$self->{dir}/witness";
    make_path($w);
    system('openssl', 'genpkey', '-algorithm', 'ed25519', '-out',
           "$w/audit.key") == 0 or croak 'openssl genpkey';
    system('openssl', 'pkey', '-in', "$w/audit.key", '-pubout', '-out',
           "$w/audit.pub") == 0 or croak 'openssl pkey';
    $self->psql("CREATE ROLE $login LOGIN IN ROLE mt5credit_audit");
    return $w;
}

# Whole or not at all: a process may be reading the file (a worker
# started a moment ago reads the password file the next worker's config
# writes again), so the content goes to a temporary file, renamed over
# the old one, whose mode it keeps.
sub write_file {
    my ($self, $name, $content) = @_;
    my $path = $name =~ m{^/} ? $name : "$self->{dir}/$name";
    make_path(dirname($path));
    my $tmp = "$path.tmp-$$";
    open my $fh, '>', $tmp or croak "$tmp: $!";
    binmode $fh;
    print $fh $content or croak "$tmp: $!";
    close $fh or croak "$tmp: $!";
    my @old = stat $path;
    chmod $old[2] & 07777, $tmp if @old;
    rename $tmp, $path or croak "$path: $!";
    return $path;
}

sub nginx_test_config {
    my ($self, $conf) = @_;
    my $file = $self->write_file('test.conf', $conf);
    my $out = `$NGINX -t -p $self->{dir}/ -c $file -e $self->{dir}/test-error.log 2>&1`;
    return ($? == 0, $out);
}

sub start_nginx {
    my ($self, $http, %opt) = @_;
    make_path("$self->{dir}/body");
    $self->{single} = $opt{single} ? 1 : 0;
    my $file = $self->write_file('nginx.conf', $self->nginx_conf($http, %opt));
    $self->spawn('nginx', $NGINX, '-p', "$self->{dir}/", '-c', $file,
                 '-e', "$self->{dir}/error.log");
    wait_port($self->{nginx_port}, 'nginx', $opt{single} ? 120 : 30);
    return $self->{nginx_port};
}

sub reload_nginx {
    my ($self, $http, %opt) = @_;
    my $file = $self->write_file('nginx.conf', $self->nginx_conf($http, %opt))
        if defined $http;
    kill 'HUP', $self->{pids}{nginx};
    sleep 1;
}

# Graceful stop: QUIT, then wait for the master.  Returns its exit status.
# A single-process nginx (valgrind runs) may take the signal just before it
# sleeps in epoll_wait() and then sleep until its next timer; a connection
# to its port wakes it (a master process waits in sigsuspend() instead).
sub stop_nginx {
    my ($self) = @_;
    my $pid = $self->{pids}{nginx} or return;
    return $self->reap('nginx', 'QUIT', 60) unless $self->{single};

    kill 'QUIT', $pid;
    my $until = time + 120;
    while (time < $until) {
        if (waitpid($pid, WNOHANG) == $pid) {
            delete $self->{pids}{nginx};
            return $?;
        }
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $self->{nginx_port},
                                      Proto => 'tcp', Timeout => 1);
        close $s if $s;
        sleep 0.5;
    }
    return $self->reap('nginx', 'KILL', 10);
}

sub nginx_port { $_[0]{nginx_port} }

sub error_log {
    my ($self, $from) = @_;
    open my $fh, '<', "$self->{dir}/error.log" or return '';
    seek $fh, $from || 0, 0;
    local $/;
    my $text = <$fh>;
    close $fh;
    return $text // '';
}

sub error_log_size { -s "$_[0]{dir}/error.log" || 0 }

# One unlabelled metric of the edge's status page (a location
# "= /status" with mt5_credit_status), or -1 if it is not there.
sub status_value {
    my ($self, $name) = @_;
    my $body = $self->http('GET', '/status')->{body};
    return $body =~ /^\Q$name\E (\d+)$/m ? $1 : -1;
}

# What no test may ever see in nginx's error log.
sub log_problems {
    my ($self, $from) = @_;
    my @bad;
    for my $line (split /\n/, $self->error_log($from)) {
        push @bad, $line if $line =~ /\[(alert|crit|emerg)\]/
            || $line =~ /exited on signal/
            || $line =~ /open socket #\d+ left/
            || $line =~ /count is zero/;
    }
    return @bad;
}

# ---------------------------------------------------------------- HTTP

# A raw HTTP/1.1 request on a fresh connection, so tests control every byte
# (repeated headers, whitespace, chunked bodies).  Returns a hash:
# { status, headers (lowercase name => value), body, raw }.
sub http {
    my ($self, $method, $path, %opt) = @_;
    my $s = $self->http_start($method, $path, %opt);
    return http_end($s, $opt{timeout});
}

sub http_start {
    my ($self, $method, $path, %opt) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $opt{port} || $self->{nginx_port},
                                  Proto => 'tcp')
        or croak "connect: $!";
    my $body = $opt{body};
    my $host = $opt{host} // 'localhost';
    my $req = "$method $path HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n";
    for my $h (@{ $opt{headers} || [] }) {
        $req .= "$h->[0]: $h->[1]\r\n";
    }
    if (defined $body && $opt{chunked}) {
        $req .= "Transfer-Encoding: chunked\r\n\r\n";
        my $n = $opt{chunk} || 1000;
        for (my $i = 0; $i < length $body; $i += $n) {
            my $part = substr($body, $i, $n);
            $req .= sprintf("%x\r\n%s\r\n", length $part, $part);
        }
        $req .= "0\r\n\r\n";
    } elsif (defined $body) {
        $req .= "Content-Length: " . length($body) . "\r\n\r\n" . $body;
    } else {
        $req .= "\r\n";
    }
    $s->autoflush(1);
    print $s $req;
    return $s;
}

sub http_end {
    my ($s, $timeout) = @_;
    my $raw = '';
    local $SIG{ALRM} = sub { die "http timeout\n" };
    alarm($timeout || 30);
    while (1) {
        my $n = sysread($s, my $buf, 65536);
        last unless $n;
        $raw .= $buf;
    }
    alarm 0;
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my ($status) = ($head // '') =~ m{^HTTP/1\.\d (\d{3})};
    my %h;
    for my $l (split /\r\n/, $head // '') {
        $h{lc $1} = $2 if $l =~ /^([^:]+):\s*(.*)$/;
    }
    return { status => $status // 0, headers => \%h, body => $body // '',
             raw => $raw };
}

# ---------------------------------------------------------------- teardown

sub teardown {
    my ($self) = @_;
    return if $self->{torn} || $$ != $self->{owner};
    $self->{torn} = 1;
    $self->reap('nginx', 'TERM', 10) if $self->{pids}{nginx};
    $self->reap($_, 'TERM', 10) for keys %{ $self->{pids} };
    if ($self->{pg_up}) {
        system("$PGBIN/pg_ctl -D $self->{dir}/pg -m immediate -w stop >/dev/null 2>&1");
        $self->{pg_up} = 0;
    }
    for my $s (values %{ $self->{standby} || {} }) {
        next unless $s->{up};
        system("$PGBIN/pg_ctl -D $s->{data} -m immediate -w stop >/dev/null 2>&1");
        $s->{up} = 0;
    }
    if ($self->{keep}) {
        print STDERR "# sandbox kept in $self->{dir}\n";
    }
}

sub DESTROY { $_[0]->teardown }

# the program's exit status survives the teardown (reap and system set $?)
END {
    my $status = $?;
    $_->teardown for @LIVE;
    $? = $status;
}


package Mt5Credit::Sandbox::Session;

sub new {
    my ($class, $pipe, $out) = @_;
    return bless { pipe => $pipe, out => $out }, $class;
}

sub send { my ($self, $sql) = @_; print { $self->{pipe} } "$sql\n"; }

sub output {
    my ($self) = @_;
    open my $fh, '<', $self->{out} or return '';
    local $/;
    return <$fh> // '';
}

sub close {
    my ($self) = @_;
    return unless $self->{pipe};
    close $self->{pipe};
    $self->{pipe} = undef;
}

sub DESTROY { $_[0]->close }

1;
