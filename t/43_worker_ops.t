#!/usr/bin/perl
#
# Running the worker: several MT5 servers, several processes, the
# commands around them.  Impossible:
#   - a credit going to another MT5 server than its deposit names
#   - more Web API sessions on a server than its cap, however many
#     workers run
#   - two calls for one credit with several workers and servers
#   - `mt5credit resolve` leaving a resolvable unknown unresolved
#   - an alert that reaches only the log when a command or URL is
#     configured
#   - a configuration typo starting a worker (it names file and line)
#   - `mt5credit status` hiding what is pending, unknown or open

use strict;
use warnings;

use IO::Socket::INET;
use POSIX ();
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Mt5Sim;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $live1 = $st->sim;
my $live2 = Mt5Credit::Mt5Sim->new($sb, name => 'live2sim');

my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
my $alerts = $sb->dir . '/alerts.txt';

# a login on each server; the same number on both, to catch a mix-up
$st->account(login => 70001);
$live2->add_account(login => 71001, group => 'real\\usd', balance => '0.00',
                    credit => '0.00', rights => 1);
$live2->add_account(login => 70001, group => 'real\\usd', balance => '0.00',
                    credit => '0.00', rights => 1);
$sb->psql("SELECT mt5credit.register_account('bob', 'live2', 71001, 'USD')",
          user => 'portal');

sub conf {
    my ($name, %opt) = @_;
    return Mt5Credit::Worker::config($sb, $name,
        servers => [ [ 'live1', $live1, sessions => 1 ],
                     [ 'live2', $live2, sessions => 1 ] ],
        alert_command => "echo \$MT5CREDIT_ALERT_KIND \$MT5CREDIT_ALERT_CREDIT >> $alerts",
        %fast, %opt);
}

sub pay_live2 {
    my ($amount) = @_;
    my $dep = $sb->sql1("SELECT reference FROM mt5credit.create_deposit("
                        . "'bob', 'ops-key-$amount', 'stripe', 'live2', "
                        . "71001, $amount, 'USD')", user => 'portal');
    my $res = $st->webhook(Mt5Credit::Provider::stripe_event(
        deposit => $dep, amount => $amount, pi => "pi_ops2_$amount"));
    return $res->{body} =~ /"credit":(\d+)/ ? $1 : undef;
}

# --- configuration and help ----------------------------------------------------

{
    my $bad = $sb->write_file('bad.conf', "database = \"host=127.0.0.1\"\n"
                              . "leese = 20\n");
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $bad);
    is($rc, 2, 'a misspelt key stops the worker (exit 2)');
    like($out, qr/bad\.conf:2: unknown key "leese"/,
         'naming the file, the line and the key');

    my $short = $sb->write_file('short.conf', "database = \"x\"\n"
                                . "call_timeout = 30\nlease = 60\n");
    ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $short);
    like($out, qr/lease \(60s\) must be at least 3 x call_timeout \+ 5/,
         'a lease too short for its calls is refused');

    ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '--help');
    is($rc, 0, 'work --help succeeds');
    like($out, qr/--config.*--once/s, 'and lists its options');
    like($out, qr/password_file.*ca_file.*tls_verify.*sessions/s,
         'and every configuration key');
    unlike($out, qr/Password1/, 'and no secret');
}

# --- several servers, several workers, capped sessions ------------------------

my @one = map { $st->pay(login => 70001, amount => 1000 + $_) } 1 .. 10;
my @two = map { pay_live2(2000 + $_) } 1 .. 10;

my $c1 = conf('ops1');
my $c2 = conf('ops2');
my $c3 = conf('ops3');
Mt5Credit::Worker::start($sb, $_->[0], $_->[1])
    for [ 'ops1', $c1 ], [ 'ops2', $c2 ], [ 'ops3', $c3 ];

ok(Mt5Credit::Worker::wait_for(sub {
       !grep { $st->status_of($_) ne 'done' } @one, @two }, 60),
   '20 credits on two MT5 servers, three workers: all done');

is(scalar(grep { @{ $st->deals_of($_) } == 1 } @one), 10,
   'every live1 credit is one deal on live1');
is(scalar(grep { my $r = $st->ref_of($_); grep { $_->{Comment} eq $r }
                 @{ $live2->ledger->{deals} } } @one), 0,
   'and none of them reached live2 (where login 70001 exists too)');
is(scalar(grep { my $r = $st->ref_of($_);
                 (grep { $_->{Comment} eq $r && $_->{Login} eq '71001' }
                  @{ $live2->ledger->{deals} }) == 1 } @two), 10,
   'every live2 credit is one deal on live2, login 71001');

for my $sim ([ live1 => $live1 ], [ live2 => $live2 ]) {
    my $stats = $sim->[1]->stats;
    ok(($stats->{connections}{open} // $stats->{connections_open} // 0) <= 1,
       "$sim->[0]: at most one session open (cap 1, three workers)")
        or diag(explain($stats));
}

Mt5Credit::Worker::stop($sb, $_) for qw(ops1 ops2 ops3);

# --- mt5credit resolve, alerts ----------------------------------------------------

{
    # a call dropped after executing, and no worker left to look it up
    $live1->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 70001, amount => 3001);
    Mt5Credit::Worker::start($sb, 'once', conf('once'), '--once');
    Mt5Credit::Worker::wait_for(sub { $st->status_of($id) eq 'unknown' }, 20);
    Mt5Credit::Worker::stop($sb, 'once');
    is($st->status_of($id), 'unknown', 'a dropped call left unknown');

    sleep 10;   # past the lease and the settle margin
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'resolve', '-c', $c1);
    is($rc, 0, 'mt5credit resolve runs one round and exits 0');
    is($st->status_of($id), 'done', 'and the deal it found is recorded');
    is(scalar @{ $st->deals_of($id) }, 1, 'one deal');
}

{
    # a credit for a login MT5 does not know: failed, and alerted
    $sb->register_account('alice', 79999, 'USD');
    my $id = $st->pay(login => 79999, amount => 3002);
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $c1,
                                            '--once');
    is($st->status_of($id), 'failed', 'a login missing in MT5: failed');
    like($out, qr/ALERT alert=mt5_account_missing credit=$id/,
         'the alert is in the log');
    open my $fh, '<', $alerts;
    my $sent = do { local $/; <$fh> } // '';
    like($sent, qr/^mt5_account_missing $id$/m,
         'and reached the alert command, kind and credit in its environment');
}

{
    # a scheduled run that spent its retries: its unit's OnFailure= runs
    # "mt5credit unit-failed %n", which pages the same way
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'unit-failed', '-c', $c1,
                                            'mt5credit-reconcile@stripe.service');
    is($rc, 0, 'unit-failed: a scheduled run that gave up is alerted');
    like($out, qr/ALERT alert=scheduled_run_failed .*mt5credit-reconcile\@stripe\.service failed and spent its retries/,
         '... naming the unit in the log');
    open my $fh, '<', $alerts;
    my $sent = do { local $/; <$fh> } // '';
    like($sent, qr/^scheduled_run_failed 0$/m, '... and through alert_command');
    ($rc, $out) = Mt5Credit::Worker::run($sb, 'unit-failed', '-c', $c1,
                                         'x; rm -rf /');
    is($rc, 2, '... a unit name it is not: exit 2');
}

{
    # the same through alert_url: a POSTed JSON object
    my $listener = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1',
                                         LocalPort => 0, Proto => 'tcp',
                                         ReuseAddr => 1) or die $!;
    my $port = $listener->sockport;
    my $got = $sb->dir . '/alert-post.txt';
    my $pid = fork // die;
    if ($pid == 0) {
        my $c = $listener->accept;
        my $req = '';
        while (sysread($c, my $buf, 4096)) {
            $req .= $buf;
            last if $req =~ /\r\n\r\n(.*)/s && $req =~ /Content-Length: (\d+)/i
                    && length((split /\r\n\r\n/, $req, 2)[1]) >= $1;
        }
        print $c "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
        open my $fh, '>', $got;
        print $fh $req;
        close $fh;
        POSIX::_exit(0);
    }
    close $listener;

    $sb->register_account('alice', 79998, 'USD');
    my $id = $st->pay(login => 79998, amount => 3004);
    my $urlconf = conf('url', alert_command => '',
                       alert_url => "http://127.0.0.1:$port/alerts");
    Mt5Credit::Worker::run($sb, 'work', '-c', $urlconf, '--once');
    waitpid($pid, 0);
    open my $fh, '<', $got;
    my $req = do { local $/; <$fh> } // '';
    like($req, qr{^POST /alerts }, 'alert_url receives a POST');
    like($req, qr/"kind":"mt5_account_missing"/, 'naming the kind');
    like($req, qr/"credit":$id\b/, 'and the credit');
}

# --- status ---------------------------------------------------------------------

{
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--database',
        'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit user=worker',
        '--prometheus');
    is($rc, 0, 'mt5credit status --prometheus');
    my $done = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                         . "WHERE status = 'done' AND kind = 'deposit'");
    like($out, qr/^mt5credit_credits\{kind="deposit",status="done"\} $done$/m,
         "counts credits by kind and status ($done done)");
    like($out, qr/^mt5credit_open_cases\{kind="mt5_account_missing",severity="high"\} 2$/m,
         'and open cases by kind');
    like($out, qr/^# TYPE mt5credit_credits gauge$/m, 'in Prometheus text format');

    $st->pay(login => 70001, amount => 3003);
    ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $c1);
    like($out, qr/oldest_age_seconds\s+-\s+pending\s+\d+/,
         'the age of the oldest pending credit is shown');
}

done_testing;
