#!/usr/bin/perl
#
# A won dispute gives back what its chargeback took: the reinstatement
# (cbr:<id>) is money only once the chargeback debit (cbk:<id>) is made.
# Reproduced before: deposit +100, the client withdraws, the chargeback
# debit fails for want of funds, the dispute is won, and +100 is credited
# again that was never taken back.  Impossible now:
#   - a reinstatement credited while its chargeback debit failed: it stays
#     pending, never claimed, and a person has a case
#   - that case missing whichever of the two came second
#   - a reinstatement credited before its debit is done, when both are
#     made: the debit first, then the reinstatement, one deal each
#   - a refund of a credit that failed waiting for ever with no case

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

$st->account(login => 70001);
$st->start_worker('w1', call_timeout => 1, lease => 8);

sub event {
    my ($type, $credit, $dispute) = @_;
    my $res = $st->webhook(stripe_event(type => $type, amount => 10000,
                                        pi => $st->payment_of($credit),
                                        dispute => $dispute));
    is($res->{status}, 200, "$type: accepted");
    return $res->{body} =~ /"credit":(\d+)/ ? $1 : undef;
}

# --- the debit failed: the reinstatement is a case, not a credit -----------

my $dep = $st->pay(login => 70001, amount => 10000);
ok($st->wait_status($dep, 'done'), 'a deposit of 100.00 is credited');

# the client takes the money out elsewhere before the dispute
$sim->manual_deal(login => 70001, amount => '-100.00', comment => 'withdrawal');

my $cbk = event('charge.dispute.funds_withdrawn', $dep, 'du_failed');
ok($st->wait_status($cbk, 'failed'),
   'the chargeback debit fails: no funds to take');
is_deeply($st->cases_of($cbk), [ 'insufficient_funds' ], '... a case');

my $cbr = event('charge.dispute.funds_reinstated', $dep, 'du_failed');
ok(defined $cbr, 'the won dispute makes a reinstatement');
sleep 4;     # several worker rounds
is($st->status_of($cbr), 'pending',
   'the reinstatement is never claimed while its debit is failed');
is(scalar @{ $st->deals_of($cbr) }, 0, '... no deal gives it back');
is($sb->sql1("SELECT severity || ' ' || (details->>'failed') FROM "
             . "mt5credit.case WHERE credit_id = $cbr AND kind = "
             . "'reinstatement_after_failed_debit'"), "high $cbk",
   '... and a person has a case naming the failed debit');

# --- both made: the debit first ----------------------------------------------

my $dep2 = $st->pay(login => 70001, amount => 10000);
ok($st->wait_status($dep2, 'done'), 'a second deposit of 100.00');
$st->stop_worker('w1');

my $cbk2 = event('charge.dispute.funds_withdrawn', $dep2, 'du_won');
my $cbr2 = event('charge.dispute.funds_reinstated', $dep2, 'du_won');
my $claim = "SELECT coalesce((SELECT id FROM mt5credit.claim_credit("
          . "'test', 10, ARRAY['live1'])), 0)";
is($sb->sql1($claim), $cbk2, 'a claim takes the debit');
is($sb->sql1($claim), 0, 'with its debit only claimed, not done, the '
   . 'reinstatement cannot be claimed');
$sb->psql("UPDATE mt5credit.mt5_credit SET status = 'pending' "
          . "WHERE status = 'claimed' AND claimed_by = 'test'");

$st->start_worker('w1', call_timeout => 1, lease => 8);
ok($st->wait_status($cbr2, 'done', 30), 'once the debit is made, the '
   . 'reinstatement is');
is($st->status_of($cbk2), 'done', '... the debit done');
my @deals = map { @{ $st->deals_of($_) } } $cbk2, $cbr2;
is(scalar @deals, 2, '... one deal each');
ok($deals[0]{Deal} < $deals[1]{Deal}, '... the debit first');
is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE credit_id = $cbr2"),
   0, '... and no case');

# --- a refund of a credit that failed: a case, not a wait for ever ----------

$st->account(login => 70002, rights => 0);
my $dep3 = $st->pay(login => 70002, amount => 10000);
ok($st->wait_status($dep3, 'failed'), 'a deposit to a disabled account fails');
my $rfd = $st->refund(of => $dep3, amount => 10000);
ok(defined $rfd, 'its payment is refunded: a refund record');
is($sb->sql1("SELECT severity || ' ' || (details->>'failed') FROM "
             . "mt5credit.case WHERE credit_id = $rfd AND kind = "
             . "'reversal_of_failed_credit'"), "high $dep3",
   '... and a case at once: it reverses a credit that was never made');
sleep 2;
is($st->status_of($rfd), 'pending', '... the refund moves no money');

done_testing();
