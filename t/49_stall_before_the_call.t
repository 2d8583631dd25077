#!/usr/bin/perl
#
# Every step before a balance call can stall: the manager's login (two
# round trips), the account and group reads.  Each is bounded by
# call_timeout, but together they can eat the lease.  Impossible:
#   - a balance call leaving after its lease ended: the lease is checked
#     after the last of those steps, with room for the whole call, and a
#     claim without that room is released unsent (back to pending, no
#     lookup needed: nothing left)
#   - the credit lost or made twice for it: the next claim makes it, once
#   - the call re-authenticating itself (two more transfers past the
#     check): a session lost between the check and the call is "not sent"
#   - a database path that goes black (no answer, nothing closed) while
#     the checks run making a second deal: the worker's call goes out
#     inside its lease or not at all, its record hangs (bounded by the
#     connection's keepalives and tcp_user_timeout), another worker
#     sweeps the lease, finds the one deal and records it
#   - a balance call leaving before its claim is on disk (the rewind
#     guard, batch/credit/mc_rewind.c): the claim's fdatasync runs beside
#     the account checks, and the call waits for it; a flush that fails,
#     or is not done while the call could still leave in time, releases
#     the claim unsent

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

$st->account(login => 74901);

sub balance_requests { $sim->requests('/api/trade/balance') // 0 }

# a lease of 14 s holds 3 x 3 s + 5; the four steps before the call take
# 4 x 2.8 s, each within call_timeout, 11.2 s in all: with the 2 s margin
# there is no room left for a 3 s call
$sim->fault(kind => 'latency', endpoint => $_, ms => 2800, count => 1)
    for qw(/api/auth/start /api/auth/answer /api/user/get /api/group/get);

my $id = $st->pay(login => 74901, amount => 4900);
# the MT5 witness off (witness_credits 0): it would log in before the
# claim, and the stall is wanted between the claim and the call
$st->start_worker('w1', call_timeout => 3, lease => 14, settle_margin => 1,
                  witness_credits => 0);

ok($st->wait_status($id, 'done', 60), 'the credit is done in the end');
is(balance_requests(), 1, 'MT5 received exactly one balance call');
is(scalar @{ $st->deals_of($id) }, 1, '... and holds one deal');
like($st->worker_log('w1'),
     qr/credit=$id\b.*too little lease left for the call/,
     'the stalled claim was released before the call, saying why');
is(join(' ', @{ $st->history_of($id) }),
   '->pending pending>claimed claimed>pending pending>claimed claimed>done',
   '... straight back to pending (nothing was sent), then made');
is($st->credit($id)->{attempts}, 2, '... under the second claim');

# the deal was made inside the lease of the claim that made it
my $made = $sb->sql1("SELECT extract(epoch FROM max(at))::bigint FROM "
                     . "mt5credit.credit_history WHERE credit_id = $id "
                     . "AND to_status = 'claimed'");
my $deal = $st->deals_of($id)->[0];
my $offset = 60 * $sim->control(GET => '/control/time')->{offset_minutes};
cmp_ok($deal->{Time} - $offset, '<=', $made + 14,
       'the deal is no later than the lease of the claim that made it');

$st->stop_worker('w1');

# --- the database path goes black while the checks run --------------------------

{
    my $flag = $sb->dir . '/pg-path.blackhole';
    my $port = Mt5Credit::Sandbox::free_port();
    $sb->spawn('pgpath', 'perl', "$Mt5Credit::Sandbox::ROOT/t/blackhole-proxy.pl",
               $port, '127.0.0.1', $sb->pg_port, $flag);
    Mt5Credit::Sandbox::wait_port($port, 'blackhole proxy');

    $st->start_worker('w2', call_timeout => 3, lease => 14, settle_margin => 1,
        database => '"host=127.0.0.1 port=' . $port
                    . ' dbname=mt5credit user=worker"');
    my $calls = balance_requests();
    my $gets = $sim->requests('/api/user/get') // 0;
    $sim->fault(kind => 'latency', endpoint => '/api/user/get', ms => 2000,
                count => 1);
    my $id2 = $st->pay(login => 74901, amount => 4902);
    ok(Mt5Credit::Worker::wait_for(sub {
           ($sim->requests('/api/user/get') // 0) > $gets }, 20),
       'the worker behind the path claimed and is checking the account');
    open my $fh, '>', $flag or die;
    close $fh;
    my $claim = $sb->sql1("SELECT extract(epoch FROM max(at))::bigint FROM "
                          . "mt5credit.credit_history WHERE credit_id = $id2 "
                          . "AND to_status = 'claimed'");

    # another worker, on a path that works, sweeps what the lease leaves
    $st->start_worker('w3', call_timeout => 3, lease => 14, settle_margin => 1);
    ok($st->wait_status($id2, 'done', 90), 'the credit ends done');
    is(balance_requests() - $calls, 1, 'MT5 received one balance call for it');
    my $deals = $st->deals_of($id2);
    is(scalar @$deals, 1, '... one deal');
    is($st->credit($id2)->{ticket}, $deals->[0]{Deal},
       '... the one recorded');
    cmp_ok($deals->[0]{Time} - $offset, '<=', $claim + 14,
           '... made inside the lease of the claim that made it');
    like(join(' ', @{ $st->history_of($id2) }),
         qr/pending>claimed claimed>unknown unknown>done$/,
         '... recorded by the lookup once the lease was swept: the path '
         . 'really went black');
    unlink $flag;
    $st->stop_worker('w3');
    $st->stop_worker('w2');
    $sb->reap('pgpath', 'TERM', 5);
}

# --- the disk under the kept claim stalls or fails -----------------------------

# t/shim/mc_fsync_shim.c, in the worker: fdatasync() of its claim file
# slowed or failed; it logs "shim: claim fdatasync: ..." after each
my $SHIM = "$Mt5Credit::Sandbox::ROOT/build/t/mc_fsync_shim.so";
ok(-f $SHIM, "the claim file's disk double is built: $SHIM");

sub start_shimmed {
    my ($name, %env) = @_;
    local $ENV{LD_PRELOAD} = $SHIM;
    local @ENV{keys %env} = values %env;
    $st->start_worker($name, call_timeout => 3, lease => 14,
                      settle_margin => 1);
}
sub flushes {
    my @ended = $st->worker_log($_[0])
                =~ /^shim: claim fdatasync: (on disk|failed)$/mg;
    return \@ended;
}
my ($id5, $id6);

# the first claim of a worker makes its file (by rename, no fdatasync):
# a credit each, so that the next claim is the one flushed in place
{
    start_shimmed('w4', MC_SHIM_CLAIM_SYNC_MS => 4000);
    my $first = $st->pay(login => 74901, amount => 4904);
    ok($st->wait_status($first, 'done', 60), 'slow disk: a first credit');

    my $calls = balance_requests();
    my $gets = $sim->requests('/api/user/get') // 0;
    my $id4 = $st->pay(login => 74901, amount => 4905);
    ok(Mt5Credit::Worker::wait_for(sub {
           ($sim->requests('/api/user/get') // 0) > $gets }, 20),
       'the next claim is checked against MT5 ...');
    is(scalar @{ flushes('w4') }, 0,
       '... while its claim is still being flushed (the checks do not wait)');
    is(balance_requests(), $calls, '... and no balance call has left yet');

    ok($st->wait_status($id4, 'done', 60), 'the credit is done');
    is_deeply(flushes('w4'), ['on disk'], '... after one flush, on disk');
    like($st->worker_log('w4'),
         qr/^shim: claim fdatasync: on disk\n(?:.*\n)*?.*credit=$id4\b.*trade\/balance/m,
         '... and its balance call left after that flush ended');
    is(scalar @{ $st->deals_of($id4) }, 1, '... one deal');
    $st->stop_worker('w4');
}

{
    start_shimmed('w5', MC_SHIM_CLAIM_SYNC_FAIL => 1);
    my $first = $st->pay(login => 74901, amount => 4906);
    ok($st->wait_status($first, 'done', 60), 'failing disk: a first credit');

    my $calls = balance_requests();
    $id5 = $st->pay(login => 74901, amount => 4907);
    ok(Mt5Credit::Worker::wait_for(sub {
           $st->worker_log('w5') =~ /credit=$id5\b.*claim could not be kept/ },
           30),
       'a claim whose flush failed is released, saying why');
    $st->stop_worker('w5');
    is(balance_requests(), $calls, '... and no balance call left for it');
    like(join(' ', @{ $st->history_of($id5) }),
         qr/^->pending pending>claimed claimed>pending/,
         '... straight back to pending: nothing was sent');
}

{
    # 9 s of room before the call could no longer leave in time
    # (lease 14 - margin 2 - call 3): a flush of 12 s is not waited out
    start_shimmed('w6', MC_SHIM_CLAIM_SYNC_MS => 12000);
    ok($st->wait_status($id5, 'done', 60),
       'stalled disk: the credit released above is its first claim, made');
    is(scalar @{ $st->deals_of($id5) }, 1, '... one deal');

    my $calls = balance_requests();
    $id6 = $st->pay(login => 74901, amount => 4908);
    ok(Mt5Credit::Worker::wait_for(sub {
           $st->worker_log('w6') =~ /credit=$id6\b: its claim was not on disk within \d+ ms/ },
           40),
       'a claim whose flush outlasts the room for the call is released');
    $st->stop_worker('w6');
    is(balance_requests(), $calls, '... and no balance call left for it');
}

# a worker with a disk that works makes the released credit, once
$st->start_worker('w7', call_timeout => 3, lease => 14, settle_margin => 1);
ok($st->wait_status($id6, 'done', 60), 'the stalled claim is made in the end');
is(scalar @{ $st->deals_of($id6) }, 1, '... one deal');
$st->stop_worker('w7');

is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

done_testing;
