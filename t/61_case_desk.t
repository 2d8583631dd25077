#!/usr/bin/perl
#
# The case desk (`mt5credit cases`), each person logged in as their own
# database role.  Impossible:
#   - one person alone moving money: a proposal approved by its proposer,
#     in the program or straight in SQL, at the function or the table
#   - a proposal changed after it was made, then approved as changed
#   - an operator writing a table directly instead of through the desk
#   - an action without its record: who, when, before, after, evidence
#   - anything deleted: actions, proposals, cases
#   - a correction of a credit that is not done (it would wait for ever)
#   - a correction rounded (12.345 USD), computed through floating point
#     (12345678.12345678 BTC 2 satoshi off), or made outside the claim path:
#     an approved correction is an ordinary credit the worker makes
#   - a resolution without a note, a resolved case changed again

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70201);

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';

sub desk {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'cases', '--database',
                                  "$db user=$who", @args);
}

sub as {
    my ($who, $sql) = @_;
    return $sb->psql($sql, user => $who, may_fail => 1, raw => 1);
}

# a credit the worker failed, with its case (as the worker would leave it)
my $credit = $st->pay(login => 70201, amount => 2500);
my $case = $st->failed_with_case($credit, 'desk-test-1');

# --- reading ----------------------------------------------------------

my ($rc, $out) = desk('ops_alice', 'list');
is($rc, 0, 'list works for an operator');
like($out, qr/^$case\s+P4\s+high\s+mt5_rejected\s+open\s+-\s+25\.00 USD/m,
     '... with priority, severity, kind, status, owner and amount');
($rc, $out) = desk('ops_alice', 'list', '--kind', 'no_such_kind');
like($out, qr/\(0 cases\)/, '... filtered by kind');

($rc, $out) = desk('ops_alice', 'show', $case);
is($rc, 0, 'show works');
like($out, qr/"credit_history"/, '... with the credit history');
like($out, qr/"events"[^\]]*"checkout\.session\.completed"/s,
     '... and the webhook event that made the credit');

# --- lifecycle and its record ----------------------------------------

($rc, $out) = desk('ops_alice', 'assign', $case, '--to', 'ops_alice',
                   '--note', 'mine');
is($rc, 0, 'assign');
is($sb->sql1("SELECT status || ':' || assigned_to FROM mt5credit.case "
             . "WHERE id = $case"), 'assigned:ops_alice', '... assigned');
is($sb->sql1("SELECT actor || ' ' || (before->>'status') || '>' || "
             . "(after->>'status') FROM mt5credit.case_action WHERE "
             . "case_id = $case AND action = 'assign'"),
   'ops_alice open>assigned', '... recorded with who, before and after');

# --- the two-person rule ----------------------------------------------

($rc, $out) = desk('ops_alice', 'propose', $case, '--action',
                   'requeue_credit', '--note', 'the account was enabled',
                   '--evidence', 'ticket OPS-1');
is($rc, 0, 'alice proposes to re-queue the failed credit') or diag $out;
my ($proposal) = $out =~ /proposal (\d+) made/;
ok($proposal, '... a proposal');
is($st->status_of($credit), 'failed', '... nothing moved yet');

($rc, $out) = desk('ops_alice', 'approve', $proposal);
isnt($rc, 0, 'alice cannot approve her own proposal');
like($out, qr/two-person rule/, '... and is told why');
is($st->status_of($credit), 'failed', '... the credit did not move');

like(as('ops_alice', "SELECT mt5credit.case_decide($proposal, 'approve', "
        . "'me again')"), qr/two-person rule/,
     'nor by calling the database function herself');
like(as('ops_alice', "UPDATE mt5credit.money_proposal SET status = "
        . "'approved', decided_by = 'ops_bob', decided_at = now() "
        . "WHERE id = $proposal"), qr/permission denied/,
     'nor by writing the proposal table');
like(as('ops_alice', "UPDATE mt5credit.mt5_credit SET status = 'pending' "
        . "WHERE id = $credit"), qr/permission denied/,
     'nor by writing the credit');
like($sb->psql("INSERT INTO mt5credit.money_proposal (case_id, action, "
               . "credit_id, note, proposed_by, status, decided_by, "
               . "decided_at) VALUES ($case, 'requeue_credit', $credit, "
               . "'x', 'ops_alice', 'approved', 'ops_alice', now())",
               may_fail => 1),
     qr/money_proposal_four_eyes/,
     'even the owner cannot store a proposal approved by its proposer');
like($sb->psql("UPDATE mt5credit.money_proposal SET note = 'changed' "
               . "WHERE id = $proposal", may_fail => 1),
     qr/cannot change after it was made/,
     'a proposal cannot be changed under the approver');

($rc, $out) = desk('ops_alice', 'resolve', $case, '--resolution',
                   'accepted', '--note', 'x');
isnt($rc, 0, 'a case with a proposal waiting cannot be resolved around it');

($rc, $out) = desk('ops_bob', 'approve', $proposal, '--note', 'checked');
is($rc, 0, 'bob approves') or diag $out;
is($st->status_of($credit), 'pending', '... and the credit is re-queued');
is($sb->sql1("SELECT actor || ' ' || (detail->>'proposed_by') || ' ' || "
             . "(detail->>'approved_by') FROM mt5credit.credit_history "
             . "WHERE credit_id = $credit ORDER BY id DESC LIMIT 1"),
   'ops_bob ops_alice ops_bob', '... the history names both people');
($rc, $out) = desk('ops_bob', 'approve', $proposal);
isnt($rc, 0, 'a proposal is decided once');

# --- corrections: exact, and made by the worker like any credit ---------

# the re-queued credit is pending: a correction of it would wait for ever
($rc, $out) = desk('ops_alice', 'propose', $case, '--action',
                   'correcting_credit', '--amount', '1.00', '--note', 'x');
isnt($rc, 0, 'a correction of a credit that is not done is refused');
like($out, qr/credit $credit is pending: a correction adjusts a done credit/,
     '... saying why: settle it first');

Mt5Credit::Worker::run($sb, 'work', '-c', $st->worker_config('w1'), '--once');
is($st->status_of($credit), 'done', 'the worker makes the re-queued credit');

($rc, $out) = desk('ops_alice', 'propose', $case, '--action',
                   'correcting_credit', '--amount', '12.345', '--note', 'x');
isnt($rc, 0, 'a correction of 12.345 USD is refused, not rounded');
like($out, qr/whole minor units/, '... saying why');

# 12345678.12345678 BTC through double precision is 2 satoshi off
is($sb->sql1("SELECT mt5credit.major_to_minor(12345678.12345678, 'BTC')"),
   '1234567812345678', 'a typed amount becomes minor units exactly, at 8 '
   . 'digits and 16 significant ones');
is($sb->sql1("SELECT ('12345678.12345678'::numeric * 10 ^ "
             . "8::smallint)::numeric"), '1234567812345680',
   '... which numeric * 10 ^ smallint (float8, as 010 had it) is not');
like($sb->psql("SELECT pg_get_functiondef("
               . "'mt5credit.credit_case_propose'::regproc)", raw => 1),
     qr/exact_minor\(p_amount, v_cr\.currency/,
     '... and case_propose() converts through exact_minor() (079; a '
     . 'credit\'s case since 080)');
like($sb->psql("SELECT pg_get_functiondef('mt5credit.exact_minor'::regproc)",
              raw => 1),
     qr/major_to_minor\(p_amount::numeric/,
     '... which converts through it');

($rc, $out) = desk('ops_alice', 'propose', $case, '--action',
                   'correcting_credit', '--amount', '12.50', '--note',
                   'compensation agreed', '--evidence', 'mail 2026-11-29');
my ($p2) = $out =~ /proposal (\d+) made/;
($rc, $out) = desk('ops_bob', 'reject', $p2, '--note', 'not agreed');
is($rc, 0, 'bob rejects a correction');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
             . "WHERE kind = 'correction'"), 0, '... and nothing is made');

($rc, $out) = desk('ops_bob', 'propose', $case, '--action',
                   'correcting_debit', '--amount', '5.00', '--note',
                   'overpaid');
my ($p3) = $out =~ /proposal (\d+) made/;
($rc, $out) = desk('ops_alice', 'approve', $p3, '--note', 'agreed');
is($rc, 0, 'bob proposes a correcting debit, alice approves') or diag $out;
my $cor = $sb->sql1("SELECT id FROM mt5credit.mt5_credit "
                    . "WHERE kind = 'correction'");
is($st->credit($cor)->{reference}, "cor:$cor",
   '... a correction credit with its own reference');
is($sb->sql1("SELECT direction || ' ' || amount_minor || ' ' || status || "
             . "' ' || original_credit_id FROM mt5credit.mt5_credit "
             . "WHERE id = $cor"), "debit 500 pending $credit",
   '... a pending debit of 5.00 linked to the credit');

my $conf = $st->worker_config('w1');
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($st->status_of($cor), 'done', 'the worker makes the correction');
is(scalar @{ $st->deals_with("cor:$cor") }, 1,
   '... one MT5 deal with the correction reference');

# --- resolution, and nothing deleted -----------------------------------

($rc, $out) = desk('ops_alice', 'resolve', $case, '--resolution',
                   'corrected', '--note', '');
isnt($rc, 0, 'a resolution needs a note');
($rc, $out) = desk('ops_alice', 'resolve', $case, '--resolution',
                   'corrected', '--note', 're-queued and corrected',
                   '--evidence', "deal of cor:$cor");
is($rc, 0, 'resolve with resolution, note and evidence') or diag $out;
is($sb->sql1("SELECT status || ' ' || resolution || ' ' || resolved_by "
             . "FROM mt5credit.case WHERE id = $case"),
   'resolved corrected ops_alice', '... resolved, by whom, how');
is($sb->sql1("SELECT evidence->>0 FROM mt5credit.case_action WHERE "
             . "case_id = $case AND action = 'resolve'"), "deal of cor:$cor",
   '... with its evidence');
($rc, $out) = desk('ops_bob', 'assign', $case, '--to', 'ops_bob');
isnt($rc, 0, 'a resolved case is not changed again');

is(join(',', map { $_->[0] } @{ $sb->psql(
       "SELECT action || ':' || actor FROM mt5credit.case_action "
       . "WHERE case_id = $case ORDER BY id") }),
   'assign:ops_alice,propose:ops_alice,approve:ops_bob,propose:ops_alice,'
   . 'reject:ops_bob,propose:ops_bob,approve:ops_alice,resolve:ops_alice',
   'every action is on the record, in order, with who did it');

like($sb->psql("DELETE FROM mt5credit.case_action WHERE case_id = $case",
               may_fail => 1), qr/append-only|refuse|not allowed/i,
     'actions cannot be deleted');
like($sb->psql("DELETE FROM mt5credit.money_proposal", may_fail => 1),
     qr/append-only|refuse|not allowed/i, 'proposals cannot be deleted');
like($sb->psql("DELETE FROM mt5credit.case WHERE id = $case",
               may_fail => 1), qr/append-only|refuse|not allowed/i,
     'cases cannot be deleted');

done_testing;
