#!/usr/bin/perl
#
# A claim's transitions go on the connection it was made on, or nowhere.
# The worker's conninfo names two hosts (target_session_attrs=read-write),
# as after a failover.  Its claim of credit X is made on A; while its
# balance call runs, the claim it sent ahead waits on a lock and A dies.
# The next statement would connect again, and reach B: a database that
# went its own way, where identity X is another payment's credit (lost
# WAL lets a promoted standby hand out ids again until the rewind is
# noticed; here the sequence is set to show it), claimed by another host
# at the same attempt.
#
# Measured on 5d00176 (this file's first run, before the fix): the
# worker's "done, deal T" for A's payment landed on B's credit X, a
# payment that never reached MT5, which then read done with another
# payment's ticket.  Impossible now:
#   - a deal recorded on a credit of another database: the transition is
#     not sent on a connection other than its claim's; B's credit stays
#     as its own claimer left it
#   - the deal lost: it was made, the worker says it was not recorded,
#     and MT5 holds it under A's payment's reference for the resolver

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Worker;

my ($p1, $p2) = map { Mt5Credit::Sandbox::free_port() } 1 .. 2;
my $multi = sub {
    "host=127.0.0.1,127.0.0.1 port=$p1,$p2 dbname=mt5credit "
    . "user=$_[0] target_session_attrs=read-write"
};

my $st = Mt5Credit::Stack->new(sandbox => { pg_port => $p1 }, redis => 0);
my $sb = $st->sb;
my $sim = $st->sim;
$st->account(login => 5101);
$st->account(login => 5102);

# B: a copy of A that went its own way (promoted, then written apart)
$sb->start_standby('b', port => $p2);
$sb->standby_caught_up('b');
system("$Mt5Credit::Sandbox::PGBIN/pg_ctl", '-D', $sb->dir . '/b', '-w',
       '-t', '60', 'promote') == 0 or die 'promote failed';

# A: two payments, X and the next
my $x = $st->pay(login => 5101, amount => 4242);
my $next = $st->pay(login => 5101, amount => 4343);
ok($x && $next == $x + 1, "A holds credits X ($x) and the next");
my $ref_a = $st->ref_of($x);

# B: identity X is another payment's, claimed by another host, attempt 1
$sb->psql("SELECT setval('mt5credit.mt5_credit_id_seq', $x, false)",
          port => $p2);
my $dep_b = $sb->sql1("SELECT reference FROM mt5credit.create_deposit("
                      . "'alice', 'other-db-1', 'stripe', 'live1', 5102, "
                      . "7777, 'USD')", user => 'portal', port => $p2);
my $body = stripe_event(deposit => $dep_b, amount => 7777, currency => 'USD',
                        pi => 'pi_other_db_1');
my $in_b = $sb->sql1("SELECT credit_id FROM mt5credit.ingest('stripe', NULL, "
                     . "convert_to(\$b\$$body\$b\$, 'UTF8'), 'stripe', "
                     . "extract(epoch FROM now())::bigint)",
                     user => 'edge', port => $p2);
is($in_b, $x, 'B holds another payment under identity X');
is($sb->sql1("SELECT id || ' ' || attempts FROM mt5credit.claim_credit("
             . "'other-host', 300, '{live1}')", user => 'worker',
             port => $p2), "$x 1", 'claimed there by another host, attempt 1');
my $ref_b = $sb->sql1("SELECT reference FROM mt5credit.mt5_credit "
                      . "WHERE id = $x", port => $p2);
isnt($ref_b, $ref_a, '(another payment: another reference)');

# the pre-call checks slow enough to take a lock behind the claim, the
# balance call slow enough to kill A while it runs
$sim->fault(kind => 'latency', ms => 1500, count => 0,
            endpoint => '/api/user/get');
$sim->fault(kind => 'latency', ms => 3000, count => 0,
            endpoint => '/api/trade/balance');
$st->start_worker('w1', call_timeout => 8, lease => 60,
                  state_dir => $sb->dir . '/w1',
                  database => '"' . $multi->('worker') . '"',
                  query_database => '"' . $multi->('query') . '"');

ok(Mt5Credit::Worker::wait_for(sub {
       $st->worker_log('w1') =~ /credit=$x ref=\S+ server=\S+ login=5101: claimed/
   }, 30), 'the worker claimed X on A');
my $lock = $sb->psql_session;
$lock->send('BEGIN; LOCK TABLE mt5credit.mt5_credit IN ACCESS EXCLUSIVE MODE;');
ok(Mt5Credit::Worker::wait_for(sub {
       $st->worker_log('w1') =~ /credit=$x ref=\S+ login=5101: trade\/balance/
   }, 30), 'its balance call is on its way, the claim sent ahead waits');
sleep 0.5;
$sb->stop_postgres('immediate');

ok(Mt5Credit::Worker::wait_for(sub {
       $st->worker_log('w1') =~ /credit=$x ref=\S+: deal \d+ made but not recorded/
   }, 30), 'the deal was made, and the worker says it was not recorded')
    or diag $st->worker_log('w1');
like($st->worker_log('w1'),
     qr/credit=$x ref=\Q$ref_a\E: the connection it was claimed on is gone/,
     'because the connection it was claimed on is gone');
is(scalar(@{ $st->deals_with($ref_a) }), 1,
   "MT5 holds the deal under A's payment's reference, for the resolver");

sleep 1;
is($sb->sql1("SELECT status || ' ' || attempts || ' ' || claimed_by || ' ' "
             . "|| coalesce(mt5_deal_ticket::text, '-') FROM "
             . "mt5credit.mt5_credit WHERE id = $x", port => $p2),
   "claimed 1 other-host -",
   "B's credit X is as its own claimer left it: no other payment's deal on it");
is(scalar(@{ $st->deals_with($ref_b) }), 0,
   "(B's payment has no deal of its own)");

$st->stop_worker('w1');
$sb->teardown;
done_testing;
