#!/usr/bin/perl
#
# A deposit's own status (sql/013_deposit_lifecycle.sql), the state machine
# where the webhook path and the provider query path meet.  Impossible:
#   - a deposit going backwards: a failure or "pending" reported after the
#     success is recorded as a conflict with a case, never applied
#   - a backwards change by anyone writing the table, the owner included
#   - money that did arrive being refused: a payment after a failure or
#     after expiry is applied
#   - a status change without its history row, or a report that changes
#     nothing writing one
#   - the same conflict reported twice opening two cases
#   - what a deposit is about (client, login, amounts) changing, or a
#     deposit being deleted
#   - the order of two reports deciding the outcome: paid and failed in
#     either order end succeeded
#   - a webhook saying a payment failed or expired moving money, or moving
#     a deposit backwards (webhook path, sql/014): it moves the deposit's
#     status forward, or is a conflict with a case
#   - an event moving another provider's deposit
#   - a client reading "refunded" before the refund is made, or another
#     client's refunds (020: refunding and refunded, derived from the
#     refund records, never stored twice)

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->register_account('alice', 1301, 'USD');

my $n = 0;
sub deposit {
    my $ref = $sb->create_deposit(client => 'alice', login => 1301,
                                  amount => 5000, key => 'lifecycle-' . ++$n);
    return $sb->sql1("SELECT id FROM mt5credit.deposit "
                     . "WHERE reference = '$ref'");
}

sub observe {
    my ($id, $status, $source) = @_;
    return $sb->sql1("SELECT mt5credit.deposit_observe($id, '$status', '"
                     . ($source // 'test') . "')");
}

sub status { $sb->sql1("SELECT status FROM mt5credit.deposit WHERE id = $_[0]") }

sub history {
    my ($id) = @_;
    return join ' ', map { "$_->[0]>$_->[1]" } @{ $sb->psql(
        "SELECT from_status, to_status FROM mt5credit.deposit_history "
        . "WHERE deposit_id = $id ORDER BY id") };
}

# --- forward ------------------------------------------------------------

my $d1 = deposit();
is(status($d1), 'created', 'a new deposit is created');
is(observe($d1, 'pending', 'poll'), 'applied', 'created -> pending');
is(observe($d1, 'pending', 'webhook'), 'unchanged',
   'the same status again changes nothing');
is(observe($d1, 'succeeded', 'webhook'), 'applied', 'pending -> succeeded');
is(history($d1), 'created>pending pending>succeeded',
   'each change is in the history, the repeat is not');
is($sb->sql1("SELECT detail->>'source' FROM mt5credit.deposit_history "
             . "WHERE deposit_id = $d1 ORDER BY id LIMIT 1"), 'poll',
   '... with the source that reported it');

# --- never backwards ------------------------------------------------------

is(observe($d1, 'failed', 'webhook'), 'conflict',
   'a failure reported after the success is a conflict');
is(status($d1), 'succeeded', '... not applied');
is(observe($d1, 'pending', 'poll'), 'conflict',
   'so is a late "pending"');
is(observe($d1, 'failed', 'poll'), 'conflict', 'the failure reported again');
is($sb->sql1("SELECT count(*) FROM mt5credit.deposit_conflict "
             . "WHERE deposit_id = $d1"), 3, 'every report is kept');
is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE deposit_id = $d1 "
             . "AND kind = 'deposit_status_conflict'"), 2,
   '... one case per status reported, not per report');
is(history($d1), 'created>pending pending>succeeded',
   '... and the history shows no step back');

like($sb->psql("UPDATE mt5credit.deposit SET status = 'failed' "
               . "WHERE id = $d1", may_fail => 1),
     qr/succeeded -> failed is not a legal transition/,
     'even the owner cannot write a step back');
like($sb->psql("UPDATE mt5credit.deposit SET amount_minor = 1 "
               . "WHERE id = $d1", may_fail => 1),
     qr/immutable except for its status/, 'nor change its amount');
like($sb->psql("DELETE FROM mt5credit.deposit WHERE id = $d1",
               may_fail => 1), qr/append-only/, 'nor delete it');
like($sb->psql("SELECT mt5credit.deposit_observe($d1, 'paid', 'x')",
               may_fail => 1), qr/not a deposit status/,
     'an unknown status is an error, not a conflict');

# --- money that arrived is taken --------------------------------------------

my $d2 = deposit();
is(observe($d2, 'failed', 'webhook'), 'applied', 'created -> failed');
is(observe($d2, 'succeeded', 'poll'), 'applied',
   'paid after the failure: applied (the money is real)');
my $d3 = deposit();
is(observe($d3, 'closed', 'expiry'), 'applied', 'created -> closed');
is(observe($d3, 'succeeded', 'webhook'), 'applied', 'paid after expiry');

# --- the order of two reports does not decide -------------------------------

my $d4 = deposit();
observe($d4, 'succeeded', 'webhook');
observe($d4, 'failed', 'poll');
my $d5 = deposit();
observe($d5, 'failed', 'poll');
observe($d5, 'succeeded', 'webhook');
is(status($d4) . ' ' . status($d5), 'succeeded succeeded',
   'paid then failed, failed then paid: both succeeded');

# --- the webhook path writes the same history --------------------------------

my $d6 = deposit();
my $ref6 = $sb->sql1("SELECT reference FROM mt5credit.deposit WHERE id = $d6");
my $body = stripe_event(deposit => $ref6, amount => 5000, pi => 'pi_life_6',
                        id => 'evt_life_6');
my $hex = unpack('H*', $body);
$sb->psql("SELECT * FROM mt5credit.ingest('stripe', NULL, "
          . "'\\x$hex'::bytea, 'stripe', " . time . ")", user => 'edge');
is(status($d6), 'succeeded', 'a paid webhook moves the deposit to succeeded');
is($sb->sql1("SELECT actor FROM mt5credit.deposit_history "
             . "WHERE deposit_id = $d6"), 'ingest:stripe:evt_life_6',
   '... with the event in its history');


# --- what webhooks say about a deposit that is not money (014) -------------

sub ingest {
    my ($body, $provider) = @_;
    my $hex = unpack('H*', $body);
    my $out = $sb->psql("SELECT outcome || '|' || coalesce(detail, '') FROM "
        . "mt5credit.ingest('" . ($provider // 'stripe') . "', NULL, "
        . "'\\x$hex'::bytea, '" . ($provider ? 'standard' : 'stripe')
        . "', " . time . ")", user => 'edge', raw => 1);
    chomp $out;
    return $out;
}

sub ref_of { $sb->sql1("SELECT reference FROM mt5credit.deposit WHERE id = $_[0]") }
sub credits_of {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE deposit_id = $_[0]")
}

my $d7 = deposit();
like(ingest(stripe_event(type => 'checkout.session.async_payment_failed',
                         payment_status => 'unpaid', deposit => ref_of($d7),
                         pi => 'pi_life_7', id => 'evt_life_7a')),
     qr/^stored\|deposit dep_\d+: failed \(applied\)/,
     'a failed async payment: the deposit is failed');
is(status($d7) . ' ' . credits_of($d7), 'failed 0', '... and no money moved');
like(ingest(stripe_event(deposit => ref_of($d7), amount => 5000,
                         pi => 'pi_life_7', id => 'evt_life_7b')),
     qr/^credit_created/, 'then paid after all: a credit');
is(status($d7), 'succeeded', '... and the deposit succeeded');
like(ingest(stripe_event(type => 'checkout.session.async_payment_failed',
                         payment_status => 'unpaid', deposit => ref_of($d7),
                         pi => 'pi_life_7', id => 'evt_life_7c')),
     qr/^case_opened\|.*recorded as a conflict, not applied/,
     'a failure delivered after the success: a conflict, with a case');
is(status($d7) . ' ' . credits_of($d7), 'succeeded 1',
   '... the deposit stays succeeded, the credit stays');
is($sb->sql1("SELECT disposition FROM mt5credit.webhook_event "
             . "WHERE provider_event_id = 'evt_life_7c'"), 'case_opened',
   '... and the event says so');

my $d8 = deposit();
like(ingest(stripe_event(type => 'checkout.session.expired',
                         payment_status => 'unpaid', deposit => ref_of($d8),
                         pi => 'pi_life_8', id => 'evt_life_8')),
     qr/closed \(applied\)/, 'an expired checkout closes the deposit');
is($sb->sql1("SELECT disposition FROM mt5credit.webhook_event "
             . "WHERE provider_event_id = 'evt_life_8'"), 'status_recorded',
   '... recorded as a status, not ignored');

my $d9 = deposit();
like(ingest(stripe_event(type => 'checkout.session.completed',
                         payment_status => 'unpaid', deposit => ref_of($d9),
                         pi => 'pi_life_9', id => 'evt_life_9')),
     qr/pending \(applied\)/,
     'a completed checkout still unpaid (a bank debit): pending, no credit');
is(credits_of($d9), 0, '... no credit');

# a generic PSP's deposit, and a Stripe event naming it
$sb->psql("SELECT mt5credit.create_deposit('alice', 'lifecycle-psp-1', "
          . "'acmepay', 'live1', 1301, 5000, 'USD')", user => 'portal');
my $d10 = $sb->sql1("SELECT id FROM mt5credit.deposit "
                    . "WHERE idempotency_key = 'lifecycle-psp-1'");
like(ingest(stripe_event(type => 'checkout.session.expired',
                         payment_status => 'unpaid', deposit => ref_of($d10),
                         pi => 'pi_life_10', id => 'evt_life_10')),
     qr/no deposit of ours to move/,
     "an event of one provider does not move another provider's deposit");
is(status($d10), 'created', '... it stays created');
like(ingest(qq({"id": "psp_life_10", "type": "payment.failed", "data": )
            . qq({"payment_id": "p10", "deposit_reference": ")
            . ref_of($d10) . qq(", "currency": "USD"}}), 'acmepay'),
     qr/failed \(applied\)/, "its own PSP's payment.failed moves it");

is($sb->sql1("SELECT detail ? 'source' FROM mt5credit.credit_history h "
             . "JOIN mt5credit.mt5_credit c ON c.id = h.credit_id "
             . "WHERE c.deposit_id = $d7 ORDER BY h.id LIMIT 1"), 'f',
   "the deposit's detail does not leak into the credit's history");

# --- refunding and refunded (020), derived from the refund records --------------

{
    my $d = deposit();
    my $ref = ref_of($d);
    my $made = sub {
        my ($id) = @_;
        $sb->psql(<<"SQL");
BEGIN;
SELECT set_config('mt5credit.actor', 'test-fixture', true);
UPDATE mt5credit.mt5_credit SET status = 'claimed', attempts = 1,
    claimed_at = now(), claimed_by = 'fixture',
    lease_expires_at = now() + interval '1 minute' WHERE id = $id;
UPDATE mt5credit.mt5_credit SET status = 'done',
    mt5_deal_ticket = 900000 + $id WHERE id = $id;
COMMIT;
SQL
    };
    my $refund_state = sub {
        my ($client) = @_;
        my $r = $sb->psql("SELECT refund_state, refunded_minor, open_count "
            . "FROM mt5credit.deposit_refund_state('" . ($client // 'alice')
            . "', '$ref')", user => 'portal');
        return @$r ? join(' ', @{ $r->[0] }) : 'nothing';
    };
    my $last_credit = sub {
        $sb->sql1("SELECT max(id) FROM mt5credit.mt5_credit "
                  . "WHERE deposit_id = $d")
    };

    ingest(stripe_event(deposit => $ref, amount => 5000, pi => 'pi_life_rf'));
    $made->($last_credit->());
    is($refund_state->(), 'none 0 0', 'a credited deposit: no refunds');
    like(ingest(stripe_event(type => 'charge.refunded', pi => 'pi_life_rf',
                             charge => 'ch_life_rf', amount => 2000,
                             charge_amount => 5000)),
         qr/^credit_created/, 'a partial refund arrives');
    is($refund_state->(), 'refunding 0 1',
       '"refunding" while its debit is not made, nothing counted yet');
    $made->($last_credit->());
    is($refund_state->(), 'partially_refunded 2000 0',
       'made: "partially refunded", 20.00');
    ingest(stripe_event(type => 'charge.refunded', pi => 'pi_life_rf',
                        charge => 'ch_life_rf', amount => 5000,
                        charge_amount => 5000));
    is($refund_state->(), 'refunding 2000 1', 'the rest: "refunding" again');
    $made->($last_credit->());
    is($refund_state->(), 'refunded 5000 0', 'all made: "refunded"');
    is(status($d), 'succeeded', "the deposit's own status stays succeeded");
    is($refund_state->('bob'), 'nothing', "another client reads nothing");
}

done_testing;
