#!/usr/bin/perl
#
# The plan of a withdrawal (sql/042_withdrawal_plan.sql): back the way
# the money came, newest deposit first, a payout for the rest, signed by
# the two people.  Impossible:
#   - a refund leg larger than what is left refundable on its payment
#     (refunds, chargebacks and earlier withdrawals' legs taken off)
#   - a leg on a deposit past its provider's refund window, of a provider
#     without one, of another login, or not yet credited
#   - the legs not adding up to the MT5 debit
#   - an FX deposit's leg at any rate but its own stored one
#   - an approval of a plan other than the one prepared and shown (a
#     refund since, another withdrawal approved since, the request's
#     digest alone)
#   - a plan changing after approval, or a leg rewritten
#   - the desk (`mt5credit withdrawals`) approving what it did not show:
#     the maker's own approval and a stale digest are refused

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Worker;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->register_account('alice', 1701, 'USD');
$sb->register_account('alice', 1702, 'USD');

my $seq = 0;

sub ingest {
    my ($body) = @_;
    my $q = $body =~ s/'/''/gr;
    return $sb->sql1("SELECT coalesce(credit_id, 0) FROM mt5credit.ingest("
                     . "'stripe', NULL, convert_to('$q', 'UTF8'), 'stripe', "
                     . "NULL)", user => 'edge');
}

# a deposit paid and credited $days_ago days ago (the worker's work, as a
# fixture); FX: paid in EUR at a stored rate to the USD account
sub deposit {
    my (%d) = @_;
    my $n = ++$seq;
    my $pi = "pi_plan_$n";
    my $ref = $sb->sql1("SELECT reference FROM mt5credit.create_deposit("
        . "'alice', 'plan-key-$n', 'stripe', 'live1', " . ($d{login} || 1701) . ", $d{amount}, '"
        . ($d{currency} || 'USD') . "'"
        . ($d{rate} ? ", $d{rate}, 'ecb', now()" : '') . ')',
        user => 'portal');
    my $body = stripe_event(deposit => $ref, amount => $d{amount},
                            currency => $d{currency} || 'USD', pi => $pi);
    my $id = ingest($body);
    done($id, $d{days_ago} // 1) unless $d{pending};
    return { id => $id, pi => $pi, ref => $ref };
}

sub done {
    my ($id, $days_ago) = @_;
    $sb->psql(<<"SQL");
SET session_replication_role = replica;
UPDATE mt5credit.mt5_credit
SET status = 'done', attempts = 1, mt5_deal_ticket = 900000 + id,
    claimed_at = now(), claimed_by = 'fixture',
    lease_expires_at = now() + interval '1 minute',
    created_at = now() - interval '$days_ago days' - interval '1 second' * id
WHERE id = $id;
SQL
}

sub request {
    my ($amount, %o) = @_;
    my $n = ++$seq;
    return $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'plan-wd-key-$n', 'stripe', 'live1', " . ($o{login} || 1701)
        . ", $amount, 'USD', 'ba_plan_dest')", user => 'portal');
}

sub prepare {
    return $sb->sql1("SELECT mt5credit.withdrawal_prepare('$_[0]', 'ok')",
                     user => 'ops_alice');
}

sub approve {
    my ($wd, $digest) = @_;
    my $out = $sb->psql("SELECT mt5credit.withdrawal_approve('$wd', "
                        . "'$digest', 'ok')", user => 'ops_bob',
                        may_fail => 1, raw => 1);
    chomp $out;
    return $out;
}

# the plan as the approver sees it: "kind amount currency (share)" legs
sub legs {
    my ($wd) = @_;
    return join ', ', map { "$_->[0] $_->[1] $_->[2]"
                            . ($_->[2] ne 'USD' ? " ($_->[3] USD)" : '') }
        @{ $sb->psql("SELECT kind, amount_minor, currency, "
                     . "account_amount_minor FROM "
                     . "mt5credit.withdrawal_plan_show('$wd')",
                     user => 'ops_bob') };
}

# --- newest first, each leg at most what is left ------------------------

my $older = deposit(amount => 10000, days_ago => 20);
my $newer = deposit(amount => 25000, days_ago => 5);

my $w1 = request(30000);
my $d1 = prepare($w1);
like($d1, qr/^[0-9a-f]{32}$/, 'a withdrawal of 300.00 is prepared');
is(legs($w1), 'refund 25000 USD, refund 5000 USD',
   '... as a refund of 250 to the newer deposit and 50 to the older, no '
   . 'payout');
is($sb->sql1("SELECT string_agg(payment_key, ' ' ORDER BY leg) FROM "
             . "mt5credit.withdrawal_plan_show('$w1')", user => 'ops_bob'),
   "$newer->{pi} $older->{pi}", '... each leg names its payment');
isnt($d1, $sb->sql1("SELECT request_digest FROM mt5credit.withdrawal "
                    . "WHERE reference = '$w1'"),
     'the digest signed is not the request\'s alone: it covers the plan');
my $request_only = $sb->sql1("SELECT request_digest FROM "
                             . "mt5credit.withdrawal WHERE reference = '$w1'");
like(approve($w1, $request_only), qr/not the request that was prepared/,
     'approving with the request\'s digest alone is refused');
is(approve($w1, $d1), '', 'the checker approves the plan shown');
is($sb->sql1("SELECT sum(l.account_amount_minor) || '/' || c.amount_minor "
             . "FROM mt5credit.withdrawal w JOIN mt5credit.withdrawal_leg l "
             . "ON l.withdrawal_id = w.id AND l.plan_no = w.plan_no "
             . "JOIN mt5credit.mt5_credit c ON c.withdrawal_id = w.id "
             . "WHERE w.reference = '$w1' GROUP BY c.amount_minor"),
   '30000/30000', 'the legs add up to the MT5 debit');

# what is left after that approval: 50 on the older deposit
my $w2 = request(40000);
prepare($w2);
is(legs($w2), 'refund 5000 USD, payout 35000 USD',
   'a second withdrawal takes what the first left (50), and the rest is '
   . 'a payout');

# --- what changes a plan before approval ---------------------------------

# a refund of the older deposit comes in after preparation
ingest(stripe_event(type => 'charge.refunded', pi => $older->{pi},
                    amount => 2000, charge => 'ch_plan_older'));
my $d2 = $sb->sql1("SELECT prepared_digest FROM mt5credit.withdrawal "
                   . "WHERE reference = '$w2'");
like(approve($w2, $d2), qr/its plan changed since it was prepared/,
     'a refund since the preparation: approval refused');
is($sb->sql1("SELECT status FROM mt5credit.withdrawal WHERE reference = "
             . "'$w2'"), 'prepared', '... it stays prepared');

# amended (to 410.00): the preparation and its plan are void; prepared
# again
$sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$w2', 41000, "
          . "'ba_plan_dest')", user => 'portal');
is($sb->sql1("SELECT status || ' ' || coalesce(plan_no::text, '-') FROM "
             . "mt5credit.withdrawal WHERE reference = '$w2'"), 'requested -',
   'an amended request has no plan');
my $d2b = prepare($w2);
is(legs($w2), 'refund 3000 USD, payout 38000 USD',
   'prepared again (for 410.00): the refund (20) is taken off the older '
   . 'deposit');
is($sb->sql1("SELECT plan_no FROM mt5credit.withdrawal WHERE reference = "
             . "'$w2'"), 2, '... as the second plan');
is(approve($w2, $d2b), '', '... and approved as shown');

# --- what never takes a leg ---------------------------------------------

my $old = deposit(amount => 9000, days_ago => 200);
my $pending = deposit(amount => 8000, pending => 1);
my $other = deposit(amount => 7000, login => 1702);
my $w3 = request(1000);
prepare($w3);
is(legs($w3), 'payout 1000 USD',
   'nothing refundable left: a deposit past the window, one not credited '
   . 'and one of another login take no leg');

$sb->psql("UPDATE mt5credit.refund_window SET days = 365 "
          . "WHERE provider = 'stripe'");
my $w4 = request(1000);
prepare($w4);
is(legs($w4), 'refund 1000 USD',
   'the window is configuration: at 365 days the old deposit refunds');
$sb->psql("UPDATE mt5credit.refund_window SET days = 180 "
          . "WHERE provider = 'stripe'");

# --- an FX deposit: its own stored rate ---------------------------------

$sb->register_account('alice', 1703, 'USD');
my $fx = deposit(amount => 10000, currency => 'EUR', rate => '1.0873',
                 login => 1703);
is($sb->sql1("SELECT amount_minor FROM mt5credit.mt5_credit WHERE id = "
             . "$fx->{id}"), 10873, 'EUR 100.00 credited as USD 108.73');
my $w5 = request(5000, login => 1703);
prepare($w5);
is(legs($w5), 'refund 4599 EUR (5000 USD)',
   'a withdrawal of USD 50.00: a refund of EUR 45.99, worth USD 50.00 at '
   . 'the deposit\'s rate (45.99 x 1.0873 = 50.0049; 46.00 would be '
   . '50.02)');
my $w6 = request(20000, login => 1703);
prepare($w6);
is(legs($w6), 'refund 10000 EUR (10873 USD), payout 9127 USD',
   'USD 200.00: the whole EUR 100.00 back, worth its USD 108.73, and a '
   . 'payout of the rest');

# --- after approval ------------------------------------------------------

like($sb->psql("UPDATE mt5credit.withdrawal_leg SET amount_minor = 1",
               may_fail => 1), qr/append-only|refuse|not allowed/i,
     'a leg cannot be rewritten, not even by the owner');
like($sb->psql("UPDATE mt5credit.withdrawal SET plan_no = 2 WHERE "
               . "reference = '$w1'", may_fail => 1, raw => 1),
     qr/is approved: its plan cannot change/,
     'an approved withdrawal cannot take another plan');
like($sb->psql("SELECT mt5credit.withdrawal_prepare('$w1', NULL)",
               user => 'ops_alice', may_fail => 1),
     qr/not waiting to be prepared/, '... nor be prepared again');
like($sb->psql("SELECT * FROM mt5credit.withdrawal_plan_show('$w1')",
               user => 'worker', may_fail => 1), qr/permission denied/,
     'the worker does not read plans');

# --- the desk: mt5credit withdrawals ------------------------------------

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
sub desk {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'withdrawals', '--database',
                                  "$db user=$who", @args);
}

my $w7 = request(2500, login => 1703);
my ($rc, $out) = desk('ops_alice', 'list');
like($out, qr/^$w7\s+requested\s+alice\s+live1\/1703\s+25\.00 USD/m,
     'the queue lists the request, with its login and amount');
($rc, $out) = desk('ops_alice', 'prepare', $w7, '--note', 'limits ok');
is($rc, 0, 'the maker prepares it') or diag $out;
my ($d7) = $out =~ /digest ([0-9a-f]{32})/;
ok($d7, '... and is given the digest for the checker');
($rc, $out) = desk('ops_bob', 'show', $w7);
like($out, qr/"prepared_digest": "$d7"/, 'show gives the checker that '
     . 'digest');
like($out, qr/"kind": "refund".*"payment": "$fx->{pi}"/s,
     '... and the plan: a refund leg to the FX deposit');
($rc, $out) = desk('ops_alice', 'approve', $w7, '--digest', $d7);
is($rc, 1, 'the maker cannot approve');
like($out, qr/maker-checker/, '... and is told why');
($rc, $out) = desk('ops_bob', 'approve', $w7, '--digest', 'f' x 32);
like($out, qr/not the request that was prepared and shown/,
     'a digest other than the one shown: refused');
($rc, $out) = desk('ops_bob', 'approve', $w7);
is($rc, 2, 'approve without --digest is a usage error');
($rc, $out) = desk('ops_bob', 'approve', $w7, '--digest', $d7,
                   '--note', 'seen');
is($rc, 0, 'another person approves it with the digest shown') or diag $out;
like($out, qr/$w7: approved/, '... approved');
($rc, $out) = desk('ops_bob', 'reject', 'wd_x1');
is($rc, 2, 'a reference that is not one is refused before connecting');

done_testing;
