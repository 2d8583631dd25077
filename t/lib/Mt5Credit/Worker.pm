package Mt5Credit::Worker;

# Worker processes (build/mt5credit work) inside a Mt5Credit::Sandbox,
# configured against the sandbox's PostgreSQL and Redis and one or more
# simulated MT5 servers (Mt5Credit::Mt5Sim).  Started processes are
# registered with the sandbox, so they are stopped whatever happens.

use strict;
use warnings;

use Carp qw(croak);
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

our $BIN = $ENV{MT5CREDIT_BIN}
    || "$Mt5Credit::Sandbox::ROOT/build/mt5credit";

# Writes a configuration file; returns its path.
#   servers => [ [ name, $mt5sim ], ... ]   (default: [ 'live1', $sim ])
#   any other key => value goes into the main section
sub config {
    my ($sb, $name, %opt) = @_;
    my $servers = delete $opt{servers} or croak 'servers => [...] needed';
    my %main = (
        database         => '"host=127.0.0.1 port=' . $sb->pg_port
                            . ' dbname=mt5credit user=worker"',
        # poll-provider logs in as the query's own role (030)
        query_database   => '"host=127.0.0.1 port=' . $sb->pg_port
                            . ' dbname=mt5credit user=query"',
        worker_name      => $name,
        poll_interval    => 1,
        lease            => 20,
        call_timeout     => 3,
        connect_timeout  => 3,
        settle_margin    => 1,
        lookback         => 600,
        resolve_interval => 1,
        resolve_retry    => 2,
        sweep_interval   => 1,
        server_backoff   => 1,
        log_level        => 'info',
        # one host's workers keep their claims here (a restore test
        # brings back the database, never this)
        state_dir        => $sb->dir . '/worker-state',
        %opt,
    );
    mkdir $main{state_dir};
    # worker_name => '': the default, <host>:<pid>
    delete $main{worker_name} if $main{worker_name} eq '';
    $main{redis} = '127.0.0.1:' . $sb->redis_port
        if $sb->redis_port && !exists $opt{redis};
    delete $main{redis} if defined $main{redis} && $main{redis} eq '';

    my $text = join '', map { "$_ = $main{$_}\n" } sort keys %main;
    for my $s (@$servers) {
        my ($sname, $sim, %extra) = @$s;
        my $pwfile = $sb->write_file("mt5-$sname.password",
                                     $sim->password . "\n");
        chmod 0600, $pwfile;
        my %srv = (
            url           => $sim->url,
            manager       => $sim->manager,
            password_file => $pwfile,
            ca_file       => $sim->ca_file,
            sessions      => 4,
            %extra,
        );
        delete $srv{ca_file} unless defined $srv{ca_file};
        $text .= "\n[server $sname]\n"
              . join('', map { "$_ = $srv{$_}\n" } sort keys %srv);
    }
    return $sb->write_file("worker-$name.conf", $text);
}

sub start {
    my ($sb, $name, $conf, @args) = @_;
    return $sb->spawn("worker-$name", $BIN, 'work', '-c', $conf, @args);
}

# Another long-running command (payout, poll-provider) under the same
# name scheme, so stop, kill9 and log_of work for it too.
sub start_cmd {
    my ($sb, $name, $cmd, $conf, @args) = @_;
    return $sb->spawn("worker-$name", $BIN, $cmd, '-c', $conf, @args);
}

# TERM (finish the call in flight) and wait; returns the exit status.
sub stop {
    my ($sb, $name) = @_;
    return $sb->reap("worker-$name", 'TERM', 60);
}

sub kill9 {
    my ($sb, $name) = @_;
    return $sb->reap("worker-$name", 'KILL', 10);
}

sub log_of {
    my ($sb, $name) = @_;
    open my $fh, '<', $sb->dir . "/worker-$name.out" or return '';
    local $/;
    return <$fh> // '';
}

# Runs "mt5credit <args>" to completion, without a shell (an argument
# is one argument, spaces and all); returns (exit status, output).
sub run {
    my ($sb, @args) = @_;
    my $pid = open(my $fh, '-|') // croak "fork: $!";
    if (!$pid) {
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        exec { $BIN } $BIN, @args or POSIX::_exit(127);
    }
    local $/;
    my $out = <$fh> // '';
    close $fh;
    return ($? >> 8, $out);
}

# Waits until $cond->() is true; returns whether it became true.
sub wait_for {
    my ($cond, $timeout) = @_;
    my $until = time + ($timeout || 30);
    while (time < $until) {
        return 1 if $cond->();
        sleep 0.1;
    }
    return 0;
}

1;
