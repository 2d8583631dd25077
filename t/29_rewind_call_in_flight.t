#!/usr/bin/perl
#
# A database that goes back in time while a balance call of the lost
# timeline is still on its way to MT5, or executing there (found by the
# chaos soak, t/85: seed 38310 under prove -j 2 made one payment two
# deals).  Measured on 1848d30: the restored database held the credit
# 'unknown' at attempt 1 with a lease long expired; rewind handling
# deferred only pending credits, so the resolver looked it up at once,
# found no deal yet (the lost call had not executed), sent it back to
# pending, and it was claimed again at the very attempt the lost claim
# had: MT5 made both deals.  sql/078 defers every open credit.  This makes
# impossible:
#   - a credit the restored database holds as unknown looked up before a
#     lost timeline's call has surely ended (its lease and settle margin)
#   - a second balance deal for it: one deal, found by the lookup, done

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $LATENCY = 2800;     # ms: inside the soak's 0.5-3 s MT5 latency faults
my %fast = (call_timeout => 2, lease => 11, settle_margin => 1,
            resolve_retry => 1, resolve_interval => 1);

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my $data = $sb->dir . '/pg';
$st->account(login => 70001);

sub copy_tree {
    my ($from, $to) = @_;
    system('rm', '-rf', $to) == 0 or die "rm $to";
    system('cp', '-a', $from, $to) == 0 or die "cp $from";
}

# the first call never executes (dropped before it): unknown, no deal
$sim->fault(kind => 'drop_before', endpoint => '/api/trade/balance',
            count => 1);
my $x = $st->pay(login => 70001, amount => 12345);
$st->start_worker('w1', %fast);
ok($st->wait_status($x, 'unknown', 30),
   'a call dropped before it executed: the credit is unknown');
$st->stop_worker('w1');
is(scalar @{ $st->deals_of($x) }, 0, '... and MT5 has no deal');

# the snapshot: the credit unknown at attempt 1
$sb->stop_postgres('fast');
copy_tree($data, "$data-snapshot");
$sb->start_postgres;

# the timeline to be lost: no deal found, claimed again (attempt 2), and
# MT5 slow to execute that call
$sim->fault(kind => 'latency', endpoint => '/api/trade/balance', count => 1,
            ms => $LATENCY);
$st->start_worker('w1', %fast);
ok(Mt5Credit::Worker::wait_for(sub {
       my @calls = $st->worker_log('w1') =~ /credit=$x [^\n]*: trade\/balance/g;
       @calls >= 2 }, 40),
   'the timeline to be lost sends its call, attempt 2');

# restored while MT5 still works on that call
$sb->stop_postgres('fast');
system('rm', '-rf', $data) == 0 or die;
system('mv', "$data-snapshot", $data) == 0 or die;
$sb->start_postgres;

ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT status FROM mt5credit.mt5_credit WHERE id = $x")
           eq 'done' }, 40),
   'after the restore the credit ends done');
sleep 3;    # a second call, had one been made, would have executed by now
my $deals = $st->deals_of($x);
is(scalar @$deals, 1, 'MT5 made one deal for it, not two')
    or diag(join("\n", 'history: ' . join(' ', @{ $st->history_of($x) }),
                 map { "deal $_->{Deal} $_->{Comment}" } @$deals));
is($sb->sql1("SELECT mt5_deal_ticket FROM mt5credit.mt5_credit "
             . "WHERE id = $x"), $deals->[0]{Deal},
   "... the one the credit records: the lost call's, found by the lookup");
is($sb->sql1("SELECT count(*) FROM mt5credit.\"case\" "
             . "WHERE kind = 'database_rewound'"), 1,
   'the rewind is a case for a person');
like($st->worker_log('w1'), qr/credit=$x [^\n]*attempt 2\b/,
     'the rewind moved the credit past the lost claim\'s attempt');

$st->stop_worker('w1');
done_testing;
