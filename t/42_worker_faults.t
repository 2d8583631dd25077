#!/usr/bin/perl
#
# The worker's rows of the failure table (seed design document 000), end to end:
# signed webhook -> nginx -> PostgreSQL -> Redis -> mt5credit work ->
# the MT5 Web API simulator over HTTPS.  For each: the credit's status and
# history, the deals in the simulator's ledger, and the cases.
# Impossible:
#   - a credit made twice, or lost, when MT5 times out after executing,
#     times out before executing, or executes and drops the connection
#   - libcurl (or anything) re-sending a dropped balance call
#   - a worker killed mid-call leaving a credit claimed forever, or sent
#     back to pending instead of unknown
#   - a deal made but not recorded (database cut) staying unrecorded
#   - an answer about another login being taken for an answer
#   - a partial, empty or miscounted deal list read as "no deal"
#   - a "no answer" case left open once MT5 answered and the credit is done
#   - a reference found with another amount settled automatically, or
#     such a credit stuck unknown and alerting for ever: two people settle
#     it as failed, on evidence, and it is never looked up again
#   - a reference found twice settled by a typo: two people name the
#     credit's own ticket, and the worker records it only once MT5 shows
#     it is a balance deal of that login, reference and amount; a ticket
#     on another login, one MT5 does not have, or one another credit holds
#     records nothing and goes back to a person
#   - a debit the account cannot take, or a credit in another currency
#     than the account's, being sent to MT5
#   - two workers making two calls for one credit
#   - Redis down stopping credits (the poll takes over)
#   - SIGTERM losing the outcome of the call in flight

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Mt5Sim;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

# short timeouts: a lease of 8 s is 3 x 1 s + 5, the least allowed
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);

$st->account(login => 70001);
$st->start_worker('w1', %fast);

# references a test books again by hand, on purpose
my %hand_booked;

sub balance_calls { $sim->stats->{endpoints}{'/api/trade/balance'}{executed} // 0 }

sub one_deal {
    my ($id, $what) = @_;
    my $c = $st->credit($id);
    my $deals = $st->deals_with($c->{reference});
    is(scalar @$deals, 1, "$what: exactly one deal carries $c->{reference}");
    is($c->{ticket}, $deals->[0]{Deal} // 'none',
       "$what: and its ticket is the one recorded");
}

# the credit's own "no answer" case, closed by the credit being settled
sub no_answer_closed {
    my ($id, $what) = @_;
    is($sb->sql1("SELECT string_agg(status || ' ' || resolution, ',') FROM "
                 . "mt5credit.case WHERE credit_id = $id AND kind = "
                 . "'mt5_no_answer'"), 'resolved settled_by_lookup',
       "$what: its mt5_no_answer case is closed, settled by the lookup");
    my $ticket = $st->credit($id)->{ticket};
    like($sb->sql1("SELECT a.actor || ': ' || a.note FROM mt5credit.case_action "
                   . "a JOIN mt5credit.case k ON k.id = a.case_id WHERE "
                   . "k.credit_id = $id AND k.kind = 'mt5_no_answer' AND "
                   . "a.action = 'resolve'"),
         qr/^w1: MT5 answered: the credit is done with deal $ticket$/,
         "$what: recorded with who and the deal");
}

sub has_history {
    my ($id, $what, @steps) = @_;
    my $h = join ' ', @{ $st->history_of($id) };
    like($h, qr/\Q$_\E/, "$what: history has $_") for @steps;
}

# --- the normal path -------------------------------------------------------

{
    my $id = $st->pay(login => 70001, amount => 50000);
    ok($st->wait_status($id, 'done'), 'a paid deposit is credited: done');
    one_deal($id, 'normal');
    is($st->deals_with($st->credit($id)->{reference})->[0]{Profit}, '500.00',
       'normal: USD 500.00 exactly, from 50000 minor units');
}

# --- MT5 times out after executing --------------------------------------------

{
    $sim->fault(kind => 'hang_after', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 70001, amount => 1111);
    ok($st->wait_status($id, 'unknown', 15),
       'timeout after executing: the worker calls it unknown');
    ok($st->wait_status($id, 'done', 30), 'and the resolver finds the deal: done');
    one_deal($id, 'timeout after executing');
    has_history($id, 'timeout after executing', 'claimed>unknown',
                'unknown>done');
    $sim->clear_faults;
}

# --- MT5 times out before executing -------------------------------------------

{
    $sim->fault(kind => 'hang', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 70001, amount => 2222);
    ok($st->wait_status($id, 'unknown', 15), 'timeout before executing: unknown');
    ok($st->wait_status($id, 'done', 40),
       'the resolver finds no deal, sends it back, and it is credited');
    one_deal($id, 'timeout before executing');
    has_history($id, 'timeout before executing', 'claimed>unknown',
                'unknown>pending', 'claimed>done');
    is($st->credit($id)->{attempts}, 2, 'in exactly two attempts');
    $sim->clear_faults;
}

# --- executed, then the connection dropped: nothing re-sends it -------------------

{
    my $calls = balance_calls();
    $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 70001, amount => 3333);
    ok($st->wait_status($id, 'done', 40), 'executed then dropped: found, done');
    one_deal($id, 'drop after executing');
    is(balance_calls() - $calls, 1,
       'MT5 executed exactly one balance call (no silent re-send)');
}

# --- the worker killed after claiming, mid-call -----------------------------------

for my $executed (1, 0) {
    my $what = $executed ? 'worker killed after MT5 executed'
                         : 'worker killed before MT5 executed';
    $sim->fault(kind => $executed ? 'hang_after' : 'hang',
                endpoint => '/api/trade/balance');
    my $calls = $sim->requests('/api/trade/balance') // 0;
    my $id = $st->pay(login => 70001, amount => $executed ? 4444 : 5555);
    ok(Mt5Credit::Worker::wait_for(sub {
           ($sim->requests('/api/trade/balance') // 0) > $calls }, 15),
       "$what: the call reached MT5");
    $st->kill_worker('w1');
    $sim->clear_faults;
    is($st->status_of($id), 'claimed', "$what: left claimed by the dead worker");

    $st->start_worker('w1', %fast);
    ok($st->wait_status($id, 'done', 40), "$what: a new worker settles it: done");
    one_deal($id, $what);
    has_history($id, $what, 'claimed>unknown');
    unlike(join(' ', @{ $st->history_of($id) }), qr/claimed>pending/,
           "$what: an expired lease never went back to pending");
}

# --- MT5 succeeded, then the database write failed ---------------------------------

{
    $sim->fault(kind => 'latency', ms => 700, endpoint => '/api/trade/balance');
    my $calls = $sim->requests('/api/trade/balance') // 0;
    my $id = $st->pay(login => 70001, amount => 6666);
    Mt5Credit::Worker::wait_for(sub {
        ($sim->requests('/api/trade/balance') // 0) > $calls }, 15);
    # cut the worker's database connection while its call is in flight
    $sb->psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
              . "WHERE usename = 'worker'");
    $sim->clear_faults;
    ok(Mt5Credit::Worker::wait_for(sub { @{ $st->deals_of($id) } == 1 },
                                   10), 'database cut: the deal was made');
    ok($st->wait_status($id, 'done', 40),
       'and found by its reference after the lease: done');
    one_deal($id, 'database cut after the call');
    like($st->worker_log('w1'), qr/credit=$id .*made but not recorded/,
         'the worker said it could not record it');
}

# --- an answer about another login ------------------------------------------------

{
    my $calls = balance_calls();
    $sim->fault(kind => 'wrong_login', endpoint => '/api/user/get');
    my $id = $st->pay(login => 70001, amount => 7777);
    ok($st->wait_status($id, 'done', 30),
       'user/get about another login: released, then credited');
    is(balance_calls() - $calls, 1, 'with one balance call, after the retry');
    like($st->worker_log('w1'), qr/credit=$id .*released, no call sent/,
         'the first claim sent nothing');
    $sim->clear_faults;

    $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
    $id = $st->pay(login => 70001, amount => 7778);
    ok($st->wait_status($id, 'unknown', 15), 'dropped call: unknown');
    $sim->fault(kind => 'wrong_login', endpoint => '/api/deal/get_page',
                count => 0);
    ok(Mt5Credit::Worker::wait_for(sub {
           grep { $_ eq 'mt5_no_answer' } @{ $st->cases_of($id) } }, 30),
       'deals about another login: no answer, a case');
    is($st->status_of($id), 'unknown', 'and the credit stays unknown');
    $sim->clear_faults;
    ok($st->wait_status($id, 'done', 30), 'a trusted answer later: done');
    one_deal($id, 'wrong login in the deal list');
    no_answer_closed($id, 'wrong login in the deal list');
}

# --- partial, empty, miscounted deal lists: never "no deal" ----------------------

for my $kind (qw(partial_page empty_page bad_total)) {
    $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 70001, amount => 8000 + length $kind);
    ok($st->wait_status($id, 'unknown', 15), "$kind: unknown");
    $sim->fault(kind => $kind, count => 0);
    ok(Mt5Credit::Worker::wait_for(sub {
           grep { $_ eq 'mt5_no_answer' } @{ $st->cases_of($id) } }, 30),
       "$kind: no answer, a case");
    unlike(join(' ', @{ $st->history_of($id) }), qr/unknown>pending/,
           "$kind: never sent back to pending");
    $sim->clear_faults;
    ok($st->wait_status($id, 'done', 30), "$kind: found once MT5 answers in full");
    one_deal($id, $kind);
    no_answer_closed($id, $kind);
}

# --- the reference with another amount: a person decides ----------------------------

{
    $sim->fault(kind => 'drop_before', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 70001, amount => 9999);
    my $ref = $st->ref_of($id);
    ok($st->wait_status($id, 'unknown', 15), 'dropped before executing: unknown');

    # someone books the same reference with another amount by hand
    my $c = Mt5Credit::Mt5Sim::Client->new_tls(port => $sim->port,
                                               ca => $sim->ca_file);
    is($c->auth->{retcode}, 0, '(a manager logs in directly)');
    my $r = $c->call('/api/trade/balance', login => 70001, type => 2,
                     balance => '1.00', comment => $ref);
    like($r->{body}, qr/"0 Done"/, "(and books $ref for 1.00)");
    $c->close;

    ok(Mt5Credit::Worker::wait_for(sub {
           grep { $_ eq 'deal_conflict' } @{ $st->cases_of($id) } }, 30),
       'the reference with another amount: a deal_conflict case');
    is($st->status_of($id), 'unknown', 'the credit stays unknown');
    is(scalar @{ $st->deals_of($id) }, 1,
       'and no second deal was made to "fix" it');

    # two people settle it: its own deal was never made (032)
    my $case = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = "
                         . "$id AND kind = 'deal_conflict'");
    my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'cases', '--database',
        "$db user=ops_alice", 'propose', $case, '--action', 'settle_failed',
        '--note', 'the 1.00 deal was booked by hand; ours never ran');
    isnt($rc, 0, 'settling an unknown credit as failed needs evidence');
    ($rc, $out) = Mt5Credit::Worker::run($sb, 'cases', '--database',
        "$db user=ops_alice", 'propose', $case, '--action', 'settle_failed',
        '--note', 'the 1.00 deal was booked by hand; ours never ran',
        '--evidence', "MT5 deals of 70001 for $ref: one, 1.00, by a dealer");
    my ($proposal) = $out =~ /proposal (\d+) made/;
    ok($proposal, '... with evidence, proposed') or diag $out;
    is($st->status_of($id), 'unknown', '... nothing moves on one person');
    ($rc, $out) = Mt5Credit::Worker::run($sb, 'cases', '--database',
        "$db user=ops_bob", 'approve', $proposal);
    is($rc, 0, 'another person approves') or diag $out;
    is($st->status_of($id), 'failed', '... the credit is failed');

    my $alerts = () = $st->worker_log('w1') =~ /ALERT.*\Q$ref\E\b/g;
    sleep 5;     # several resolve_retry periods
    is(scalar(() = $st->worker_log('w1') =~ /ALERT.*\Q$ref\E\b/g), $alerts,
       '... and never looked up or alerted again');
    is(scalar @{ $st->deals_of($id) }, 1, '... no deal was made');
}

# --- the reference twice: two people name the credit's own deal (033) ---------------

{
    my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
    my $cases = sub { Mt5Credit::Worker::run($sb, 'cases', '--database',
                                             "$db user=$_[0]", @_[1 .. $#_]) };

    $st->account(login => 70002);

    # the deal is made, its answer lost, and MT5 gives no full list for now
    $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 70001, amount => 12345);
    my $ref = $st->ref_of($id);
    ok($st->wait_status($id, 'unknown', 15), 'executed, answer lost: unknown');
    $sim->fault(kind => 'partial_page', count => 0);
    my ($ours) = map { $_->{Deal} } @{ $st->deals_of($id) };

    # a dealer books the same reference and amount again by hand
    my $c = Mt5Credit::Mt5Sim::Client->new_tls(port => $sim->port,
                                               ca => $sim->ca_file);
    is($c->auth->{retcode}, 0, '(a manager logs in directly)');
    my $r = $c->call('/api/trade/balance', login => 70001, type => 2,
                     balance => '123.45', comment => $ref);
    my ($hand) = $r->{body} =~ /"Ticket"\s*:\s*"?(\d+)/;
    ok($hand, "(and books $ref for 123.45 again: deal $hand)");
    $hand_booked{$ref} = 1;
    $r = $c->call('/api/trade/balance', login => 70002, type => 2,
                  balance => '123.45', comment => $ref);
    my ($elsewhere) = $r->{body} =~ /"Ticket"\s*:\s*"?(\d+)/;
    ok($elsewhere, "(and once more on login 70002: deal $elsewhere)");
    $c->close;
    $sim->clear_faults;

    ok(Mt5Credit::Worker::wait_for(sub {
           grep { $_ eq 'deal_conflict' } @{ $st->cases_of($id) } }, 30),
       'the reference twice with its amount: a deal_conflict case');
    is($st->status_of($id), 'unknown', '... the credit stays unknown');
    my $case = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = "
                         . "$id AND kind = 'deal_conflict'");

    my ($rc, $out) = $cases->('ops_alice', 'propose', $case, '--action',
        'settle_done', '--ticket', $ours, '--note', 'ours is the first');
    isnt($rc, 0, 'settling as done needs evidence');
    like($out, qr/evidence/, '... and says so');

    my $held = $sb->sql1("SELECT mt5_deal_ticket FROM mt5credit.mt5_credit "
                         . "WHERE status = 'done' ORDER BY id LIMIT 1");
    ($rc, $out) = $cases->('ops_alice', 'propose', $case, '--action',
        'settle_done', '--ticket', $held, '--note', 'typo',
        '--evidence', 'deal list');
    isnt($rc, 0, "a ticket another credit holds is refused at once");
    like($out, qr/credit \d+'s already/, '... naming that credit');

    # a ticket that is not the credit's, approved by two people: the
    # worker's check records nothing
    my $verdicts = sub { $sb->sql1("SELECT string_agg(outcome, ',' ORDER BY "
        . "proposal_id) FROM mt5credit.settle_verification WHERE credit_id = "
        . $id) // '' };
    my $n = 0;
    for my $bad ([ $elsewhere, 'another login' ], [ 987654321, 'no such deal' ]) {
        my ($ticket, $what) = @$bad;
        ($rc, $out) = $cases->('ops_alice', 'propose', $case, '--action',
            'settle_done', '--ticket', $ticket, '--note', "try $what",
            '--evidence', "MT5 terminal: deal $ticket");
        my ($proposal) = $out =~ /proposal (\d+) made/;
        ok($proposal, "$what: proposed") or diag $out;
        ($rc, $out) = $cases->('ops_bob', 'approve', $proposal);
        is($rc, 0, "$what: approved by another person") or diag $out;
        $n++;
        ok(Mt5Credit::Worker::wait_for(sub {
               scalar(() = $verdicts->() =~ /refused/g) == $n }, 20),
           "$what: the worker refuses the ticket");
        is($st->status_of($id), 'unknown', "$what: the credit stays unknown");
        is($sb->sql1("SELECT status FROM mt5credit.case WHERE id = $case"),
           'open', "$what: the case is back with a person");
        like($st->worker_log('w1'), qr/ALERT.*settle_refused.*\Q$ref\E\b/,
             "$what: and a person is alerted");
    }

    ($rc, $out) = $cases->('ops_alice', 'propose', $case, '--action',
        'settle_done', '--ticket', $ours, '--note', 'ours is the first; '
        . 'the dealer\'s is taken back by a correction',
        '--evidence', "MT5 deals of 70001: $ours at the call, $hand by hand");
    my ($proposal) = $out =~ /proposal (\d+) made/;
    ok($proposal, 'the right ticket: proposed') or diag $out;
    ($rc, $out) = $cases->('ops_alice', 'approve', $proposal);
    isnt($rc, 0, '... not approved by its proposer');
    is($st->status_of($id), 'unknown', '... nothing moved on one person');
    ($rc, $out) = $cases->('ops_bob', 'approve', $proposal);
    is($rc, 0, '... approved by another') or diag $out;
    ok($st->wait_status($id, 'done', 20), 'the worker checks it: done');
    is($st->credit($id)->{ticket}, $ours, '... with the ticket two people named');
    is($verdicts->(), 'refused,refused,verified', '... one verdict per request');

    my $alerts = () = $st->worker_log('w1') =~ /ALERT.*\Q$ref\E\b/g;
    sleep 4;     # several resolve_retry periods
    is(scalar(() = $st->worker_log('w1') =~ /ALERT.*\Q$ref\E\b/g), $alerts,
       '... and it is never looked up or alerted again');
    is(scalar @{ $st->deals_of($id) }, 3,
       '... and no deal was made to "fix" it');
}

# --- checks before the call -----------------------------------------------------------

{
    my $id = $st->pay(login => 70001, amount => 100000);
    ok($st->wait_status($id, 'done'), 'a deposit of 1000.00 is credited');

    # the client spends the money on MT5 before the refund arrives
    my $bal = $sim->ledger->{accounts};
    $sim->add_account(login => 70001, group => 'real\\usd', balance => '10.00',
                      credit => '0.00', rights => 1);
    my $calls = balance_calls();
    my $debit = $st->refund(of => $id, amount => 100000);
    ok($debit, 'a full refund makes a debit');
    ok($st->wait_status($debit, 'failed'),
       'the account cannot take it: failed');
    is_deeply($st->cases_of($debit), [ 'insufficient_funds' ],
              'with an insufficient_funds case');
    is(balance_calls() - $calls, 0, 'and nothing was sent to MT5');
}

{
    # our records say USD; MT5's group says JPY
    $st->account(login => 70003, group => 'real\\jpy', our_currency => 'USD',
                 balance => '0');
    my $calls = balance_calls();
    my $id = $st->pay(login => 70003, amount => 5000);
    ok($st->wait_status($id, 'failed'),
       'a login whose MT5 currency differs: failed');
    is_deeply($st->cases_of($id), [ 'currency_mismatch' ],
              'with a currency_mismatch case');
    is(balance_calls() - $calls, 0, 'and nothing was sent to MT5');
}

# --- several workers, one credit each -----------------------------------------------

{
    $st->stop_worker('w1');
    my $calls = balance_calls();
    my @ids = map { $st->pay(login => 70001, amount => 100 + $_) } 1 .. 20;
    $st->start_worker("race$_", %fast) for 1 .. 3;
    ok(Mt5Credit::Worker::wait_for(sub {
           !grep { $st->status_of($_) ne 'done' } @ids }, 60),
       '20 credits, 3 workers racing: all done');
    is(balance_calls() - $calls, 20, 'with exactly 20 balance calls');
    is(scalar(grep { @{ $st->deals_of($_) } == 1 } @ids), 20,
       'one deal per credit');
    $st->stop_worker("race$_") for 1 .. 3;
    $st->start_worker('w1', %fast);
}

# --- Redis down ------------------------------------------------------------------------

{
    $sb->stop_redis;
    my $id = $st->pay(login => 70001, amount => 4242);
    ok($st->wait_status($id, 'done', 15),
       'Redis down: the poll credits it (poll_interval 1 s)');
    one_deal($id, 'Redis down');
    $sb->start_redis;
}

# --- SIGTERM mid-call ----------------------------------------------------------------

{
    $sim->fault(kind => 'latency', ms => 700, endpoint => '/api/trade/balance');
    my $calls = $sim->requests('/api/trade/balance') // 0;
    my $id = $st->pay(login => 70001, amount => 1234);
    Mt5Credit::Worker::wait_for(sub {
        ($sim->requests('/api/trade/balance') // 0) > $calls }, 15);
    is($st->stop_worker('w1'), 0, 'SIGTERM mid-call: the worker exits cleanly');
    is($st->status_of($id), 'done', 'after recording the call in flight: done');
    one_deal($id, 'SIGTERM mid-call');
    $sim->clear_faults;
}

# --- the books balance -----------------------------------------------------------------

{
    my $deals = $sim->ledger->{deals};
    my %by_ref;
    $by_ref{ $_->{Comment} }++ for grep { $_->{Comment} =~ /^dep:/ } @$deals;
    my @doubles = grep { $by_ref{$_} > 1 && !$hand_booked{$_} }
                  sort keys %by_ref;
    is_deeply(\@doubles, [], 'no reference was booked twice by the worker');
    is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');
}

done_testing;
