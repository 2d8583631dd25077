#!/usr/bin/perl
#
# ingest(), called as the edge role exactly as nginx calls it, makes these
# impossible:
#   - one payment credited twice: the same delivery again, two event types
#     about one PaymentIntent (in either order), ten event ids about it
#   - an event id overwritten by other bytes; a conflicting body acted on,
#     or the same conflict filed twice
#   - a credit for money not confirmed (unpaid Checkout Session), for an
#     amount, currency or provider other than the deposit's, for an unknown
#     deposit, for a second payment of a deposit, for a fractional or
#     negative amount
#   - a malformed body (not JSON, not an object, not UTF-8, no id) stored
#   - a refund or chargeback debited twice, debiting more than was paid,
#     or debiting a payment that was never credited; a reinstatement
#     without a prior chargeback
#   - rounding drift: after everything was taken back, an account in
#     another currency lost exactly what it was credited, no cent more
#   - the edge role learning anything but the one row ingest() returns

use strict;
use warnings;

use JSON::PP;
use Digest::SHA qw(sha256_hex);
use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event standard_event);

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;

my $SIGNED_AT = 1767225600;

# --- helpers -------------------------------------------------------------

# the provider's real Stripe vector bodies, as bytes
my %vector;
{
    my $file = "$Mt5Credit::Sandbox::VECTORS/stripe.json";
    open my $fh, '<', $file or die "$file: $!";
    local $/;
    for my $v (@{ JSON::PP->new->utf8->decode(<$fh>) }) {
        my $body = $v->{body};
        utf8::encode($body);
        $vector{ $v->{name} } = $body;
    }
    close $fh;
}

sub vector {
    my ($name) = @_;
    return $vector{$name} // die "no Stripe vector $name";
}

sub bytes {
    my ($s) = @_;
    utf8::encode($s) if utf8::is_utf8($s);
    return $s;
}

sub hexlit { return "'\\x" . unpack('H*', bytes($_[0])) . "'::bytea" }

# Every answer the edge got, to check its shape at the end.
my @answers;

# ingest() as the edge role; returns { outcome, credit, event, detail }.
sub ingest {
    my ($body, %o) = @_;
    my $provider = $o{provider} || 'stripe';
    my $scheme = $o{scheme}
        || ($provider eq 'stripe' ? 'stripe' : 'standard');
    my $id = defined $o{event_id} ? "'$o{event_id}'" : 'NULL';
    my $out = $sb->psql(
        "SELECT outcome, credit_id, event_row_id, detail "
        . "FROM mt5credit.ingest('$provider', $id, " . hexlit($body)
        . ", '$scheme', $SIGNED_AT)", user => 'edge', raw => 1);
    my @lines = split /\n/, $out;
    my ($outcome, $credit, $event, $detail) = split /\|/, $lines[0] // '', 4;
    my $r = { outcome => $outcome // '', credit => $credit // '',
              event => $event // '', detail => $detail // '',
              rows => scalar @lines, fields => scalar(split /\|/, $lines[0] // '', 4) };
    push @answers, $r;
    return $r;
}

my $keyseq = 0;

# A deposit created by the portal for alice; { id, ref, credit }.
sub new_deposit {
    my (%d) = @_;
    my $login = $d{login} || 1001;
    my $amount = $d{amount} // 50000;
    my $cur = $d{currency} || 'USD';
    my $provider = $d{provider} || 'stripe';
    my $fx = $d{rate}
        ? ", $d{rate}, 'ecb-ref', '2026-11-29T08:00:00Z'" : '';
    my $key = sprintf('click-%06d', ++$keyseq);
    my $r = $sb->psql(
        "SELECT id, reference, credit_amount_minor "
        . "FROM mt5credit.create_deposit('alice', '$key', '$provider', "
        . "'live1', $login, $amount, '$cur'$fx)", user => 'portal');
    return { id => $r->[0][0], ref => $r->[0][1], credit => $r->[0][2] };
}

my @CREDIT = qw(id kind direction original_credit_id deposit_id provider
                provider_payment_id mt5_server mt5_login amount_minor currency
                paid_amount_minor paid_currency fx_rate fx_source reference
                status);

# Credits (as the superuser) matching a condition, oldest first.
sub credits {
    my ($where) = @_;
    my $rows = $sb->psql("SELECT "
        . join(', ', map { "coalesce(${_}::text, '')" } @CREDIT)
        . " FROM mt5credit.mt5_credit WHERE $where ORDER BY id");
    return [ map { my %c; @c{@CREDIT} = @$_; \%c } @$rows ];
}

# a payment's credit reference (066): its kind's prefix and 18 hex digits
# of sha256("<provider>:<provider payment id>")
sub payment_ref {
    my ($prefix, $c) = @_;
    return "$prefix:" . substr(sha256_hex("$c->{provider}:"
                                          . $c->{provider_payment_id}), 0, 18);
}

sub count {
    my ($table, $where) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.$table"
                     . ($where ? " WHERE $where" : ''));
}

# kind/severity of the cases matching a condition
sub cases {
    my ($where) = @_;
    return [ map { "$_->[0]/$_->[1]" } @{ $sb->psql(
        "SELECT kind, severity FROM mt5credit.\"case\" WHERE $where "
        . "ORDER BY id") } ];
}

sub event {
    my ($row) = @_;
    my $r = $sb->psql("SELECT disposition, coalesce(credit_id::text, ''), "
        . "coalesce(event_type, ''), provider_event_id FROM "
        . "mt5credit.webhook_event WHERE id = $row");
    return { disposition => $r->[0][0], credit => $r->[0][1],
             type => $r->[0][2], event_id => $r->[0][3] };
}

# Row counts of everything ingest() may write.
sub snapshot {
    return $sb->sql1(<<'SQL');
SELECT (SELECT count(*) FROM mt5credit.webhook_event) || ' events, '
    || (SELECT count(*) FROM mt5credit.webhook_event_conflict) || ' conflicts, '
    || (SELECT count(*) FROM mt5credit.mt5_credit) || ' credits, '
    || (SELECT count(*) FROM mt5credit.credit_history) || ' history, '
    || (SELECT count(*) FROM mt5credit."case") || ' cases, '
    || (SELECT count(*) FROM mt5credit.deposit WHERE status <> 'created')
    || ' deposits moved'
SQL
}

# A deposit credited through a Checkout Session; returns the credit's id.
sub credited {
    my ($dep, $pi, %o) = @_;
    my $r = ingest(stripe_event(type => 'checkout.session.completed',
                                deposit => $dep->{ref}, pi => $pi,
                                amount => $o{amount} // 50000,
                                currency => $o{currency} || 'usd'));
    die "setup: $dep->{ref} not credited: $r->{outcome} $r->{detail}"
        unless $r->{outcome} eq 'credit_created';
    return $r->{credit};
}

sub sum { my $s = 0; $s += $_ for @_; return $s }

# --- accounts and the vectors' deposits ----------------------------------

$sb->psql(<<'SQL', user => 'portal');
SELECT mt5credit.register_account('alice', 'live1', 1001, 'USD');
SELECT mt5credit.register_account('alice', 'live1', 1002, 'EUR');
SQL

$sb->psql("SELECT setval(pg_get_serial_sequence('mt5credit.deposit', 'id'), "
          . "122)");
my $d123 = new_deposit();
my $d124 = new_deposit();
is("$d123->{id} $d123->{ref} $d124->{ref}", '123 dep_000123 dep_000124',
   'the vectors\' deposits dep_000123 and dep_000124 exist (USD 500.00)');

# --- checkout.session.completed, paid -------------------------------------

my $paid = vector('valid/checkout.session.completed-paid');
my $first = ingest($paid);
is($first->{outcome}, 'credit_created',
   'checkout.session.completed (paid): outcome credit_created');

my $c = credits("deposit_id = 123");
is(scalar @$c, 1, 'paid: exactly one credit for the deposit');
my $credit123 = $c->[0]{id};
is($first->{credit}, $credit123, 'paid: ingest() returns that credit\'s id');
is_deeply([ @{ $c->[0] }{qw(kind direction status provider
                            provider_payment_id)} ],
          [ 'deposit', 'credit', 'pending', 'stripe',
            'pi_3QxTestIntent000001' ],
          'paid: a pending deposit credit keyed by the PaymentIntent');
is_deeply([ @{ $c->[0] }{qw(mt5_server mt5_login amount_minor currency
                            paid_amount_minor paid_currency fx_rate)} ],
          [ 'live1', 1001, 50000, 'USD', 50000, 'USD', '' ],
          'paid: login, server, amount and currency are the deposit\'s');
is($c->[0]{reference}, 'dep:' . substr(sha256_hex('stripe:pi_3QxTestIntent000001'), 0, 18),
   "paid: reference is the payment's, dep:<sha256(stripe:<payment>), 18 hex>");

my $hist = $sb->psql("SELECT coalesce(from_status, 'NULL'), to_status, "
                     . "actor FROM mt5credit.credit_history "
                     . "WHERE credit_id = $credit123 ORDER BY id");
is_deeply([ map { "$_->[0]>$_->[1]" } @$hist ], [ 'NULL>pending' ],
          'paid: one credit_history row, NULL -> pending');
is($hist->[0][2], 'ingest:stripe:evt_1QxTestCheckout000001',
   'paid: the history row\'s actor names the event');
is($sb->sql1("SELECT status FROM mt5credit.deposit WHERE id = 123"),
   'succeeded', 'paid: the deposit is now succeeded');

my $ev = event($first->{event});
is_deeply([ @$ev{qw(disposition credit type event_id)} ],
          [ 'credit_created', $credit123, 'checkout.session.completed',
            'evt_1QxTestCheckout000001' ],
          'paid: the event is stored with its disposition and credit');
is($sb->sql1("SELECT encode(raw_body, 'hex') || ' ' "
             . "|| encode(body_sha256, 'hex') || ' ' "
             . "|| extract(epoch FROM signed_at)::bigint "
             . "FROM mt5credit.webhook_event WHERE id = $first->{event}"),
   unpack('H*', $paid) . ' ' . sha256_hex($paid) . " $SIGNED_AT",
   'paid: the raw bytes, their SHA-256 and the signature time are stored');

# --- the same delivery again ----------------------------------------------

my $before = snapshot();
my $dup = ingest($paid);
is($dup->{outcome}, 'duplicate', 'the same body again: outcome duplicate');
is("$dup->{event} $dup->{credit}", "$first->{event} $credit123",
   'duplicate: names the stored event and its credit');
is(snapshot(), $before,
   'duplicate: no new event, conflict, credit, history or case');

# --- the same event id with other bytes -----------------------------------

(my $forged = $paid) =~ s/"amount_total": 50000/"amount_total": 90000/;
$forged =~ s/pi_3QxTestIntent000001/pi_3QxForgedIntent0001/;
isnt($forged, $paid, '(the conflicting body differs)');

my $conf = ingest($forged);
is($conf->{outcome}, 'conflict', 'same event id, other bytes: outcome conflict');
is($conf->{event}, $first->{event}, 'conflict: names the stored event');
is($conf->{credit}, '', 'conflict: returns no credit');
is(count('webhook_event_conflict', "event_id = $first->{event}"), 1,
   'conflict: one webhook_event_conflict row');
is($sb->sql1("SELECT encode(raw_body, 'hex') FROM "
             . "mt5credit.webhook_event_conflict "
             . "WHERE event_id = $first->{event}"),
   unpack('H*', $forged), 'conflict: the other bytes are kept, exactly');
is_deeply(cases("webhook_event_id = $first->{event}"),
          [ 'event_body_conflict/high' ],
          'conflict: one case event_body_conflict (and no other case)');
is($sb->sql1("SELECT encode(raw_body, 'hex') FROM mt5credit.webhook_event "
             . "WHERE id = $first->{event}"), unpack('H*', $paid),
   'conflict: the stored raw_body is unchanged, byte for byte');
is(count('webhook_event', "provider_event_id = 'evt_1QxTestCheckout000001'"),
   1, 'conflict: no second event row');
is(count('mt5_credit', "provider_payment_id = 'pi_3QxForgedIntent0001'"), 0,
   'conflict: the conflicting body was not acted on');

$before = snapshot();
my $conf3 = ingest($forged);
is($conf3->{outcome}, 'conflict', 'the same conflicting body a third time: '
   . 'still conflict');
is(snapshot(), $before, 'third time: no second conflict row, case or '
   . 'anything else');
is($sb->sql1("SELECT details->>'sightings' FROM mt5credit.\"case\" "
             . "WHERE kind = 'event_body_conflict' "
             . "AND webhook_event_id = $first->{event}"), 2,
   'third time: the one case counts a second sighting');

# --- two event types, one credit -------------------------------------------

my $pi_ev = ingest(vector('valid/payment_intent.succeeded'));
is($pi_ev->{outcome}, 'stored',
   'payment_intent.succeeded for the credited PaymentIntent: stored');
is_deeply([ @{ event($pi_ev->{event}) }{qw(disposition credit)} ],
          [ 'already_credited', $credit123 ],
          'payment_intent.succeeded: disposition already_credited, '
          . 'pointing at the credit');
is(count('mt5_credit', "deposit_id = 123"), 1,
   'checkout + payment_intent: two event types, one credit');

{
    my $d = new_deposit();
    my $pi = 'pi_reverse_order_01';
    my $r1 = ingest(stripe_event(type => 'payment_intent.succeeded',
                                 deposit => $d->{ref}, pi => $pi));
    is($r1->{outcome}, 'credit_created',
       'reverse order: payment_intent.succeeded with metadata.deposit_id '
       . 'credits first');
    my $r2 = ingest(stripe_event(type => 'checkout.session.completed',
                                 deposit => $d->{ref}, pi => $pi));
    is($r2->{outcome}, 'stored', 'reverse order: the checkout event after '
       . 'it is stored');
    is(event($r2->{event})->{credit}, $r1->{credit},
       'reverse order: and points at the same credit');
    is(count('mt5_credit', "deposit_id = $d->{id}"), 1,
       'reverse order: one credit');

    my $d2 = new_deposit();
    my $r3 = ingest(stripe_event(type => 'payment_intent.succeeded',
                                 pi => 'pi_no_metadata_01'));
    is("$r3->{outcome} " . event($r3->{event})->{disposition},
       'stored ignored', 'a PaymentIntent without metadata.deposit_id is '
       . 'stored and ignored (its checkout event credits it)');
}

# --- ten event ids about one payment ---------------------------------------

{
    my $d = new_deposit();
    my $pi = 'pi_ten_events_01';
    my @types = ('checkout.session.completed', 'payment_intent.succeeded',
                 'checkout.session.async_payment_succeeded');
    my (%outcome, %credit);
    for my $i (1 .. 10) {
        my $r = ingest(stripe_event(type => $types[$i % 3],
                                    id => "evt_ten_$i",
                                    deposit => $d->{ref}, pi => $pi));
        $outcome{ $r->{outcome} }++;
        $credit{ event($r->{event})->{credit} }++;
    }
    is_deeply(\%outcome, { credit_created => 1, stored => 9 },
              'ten event ids about one payment: one credit_created, '
              . 'nine stored');
    is(count('mt5_credit', "deposit_id = $d->{id}"), 1,
       'ten event ids: one credit');
    is(count('webhook_event', "provider_event_id LIKE 'evt_ten_%'"), 10,
       'ten event ids: all ten events stored');
    is(scalar keys %credit, 1, 'ten event ids: all point at that credit');
}

# --- unpaid, then paid asynchronously --------------------------------------

{
    my $r = ingest(vector('valid/checkout.session.completed-unpaid'));
    is($r->{outcome}, 'stored', 'checkout.session.completed unpaid: stored');
    is(event($r->{event})->{disposition}, 'status_recorded',
       'unpaid: recorded as a status (014), not as money');
    is(count('mt5_credit', 'deposit_id = 124'), 0, 'unpaid: no credit');
    is($sb->sql1('SELECT status FROM mt5credit.deposit WHERE id = 124'),
       'pending', 'unpaid: the deposit is pending, not paid');

    my $a = ingest(vector('valid/checkout.session.async_payment_succeeded'));
    is($a->{outcome}, 'credit_created',
       'async_payment_succeeded afterwards: credit_created');
    my $c = credits('deposit_id = 124');
    is_deeply([ map { "$_->{kind} $_->{amount_minor} $_->{currency} "
                      . $_->{provider_payment_id} } @$c ],
              [ 'deposit 50000 USD pi_3QxTestIntent000002' ],
              'async: one credit of the deposit\'s amount');
}

# --- what does not match the deposit ---------------------------------------

{
    my $d = new_deposit();
    my $r = ingest(stripe_event(deposit => $d->{ref}, amount => 49999,
                                pi => 'pi_amount_mismatch'));
    is($r->{outcome}, 'case_opened', 'amount other than the deposit\'s: '
       . 'case_opened');
    is(count('mt5_credit', "deposit_id = $d->{id}"), 0,
       'amount mismatch: no credit');
    is_deeply(cases("deposit_id = $d->{id}"), [ 'amount_mismatch/high' ],
              'amount mismatch: case amount_mismatch, severity high');
    is(event($r->{event})->{disposition}, 'case_opened',
       'amount mismatch: the event is stored as case_opened');
    is($sb->sql1("SELECT status FROM mt5credit.deposit WHERE id = $d->{id}"),
       'created', 'amount mismatch: the deposit is not marked paid');

    my $d2 = new_deposit();
    my $r2 = ingest(stripe_event(deposit => $d2->{ref}, currency => 'eur',
                                 pi => 'pi_currency_mismatch'));
    is($r2->{outcome}, 'case_opened', 'currency other than the deposit\'s: '
       . 'case_opened');
    is(count('mt5_credit', "deposit_id = $d2->{id}"), 0,
       'currency mismatch: no credit');
    is_deeply(cases("deposit_id = $d2->{id}"), [ 'amount_mismatch/high' ],
              'currency mismatch: case amount_mismatch, severity high');
}

{
    my $r = ingest(stripe_event(deposit => 'dep_999999',
                                pi => 'pi_unknown_deposit'));
    is($r->{outcome}, 'case_opened', 'unknown deposit reference: case_opened');
    is_deeply(cases("webhook_event_id = $r->{event}"),
              [ 'unknown_deposit/high' ], 'unknown deposit: case '
              . 'unknown_deposit');
    is(count('mt5_credit', "provider_payment_id = 'pi_unknown_deposit'"), 0,
       'unknown deposit: no credit');
}

{
    my $r = ingest(stripe_event(deposit => 'dep_000123',
                                pi => 'pi_second_for_123'));
    is($r->{outcome}, 'case_opened', 'a second PaymentIntent for a credited '
       . 'deposit: case_opened');
    is(count('mt5_credit', "deposit_id = 123 AND kind = 'deposit'"), 1,
       'second payment: no second credit');
    is_deeply(cases("webhook_event_id = $r->{event}"),
              [ 'second_payment_for_deposit/high' ],
              'second payment: case second_payment_for_deposit');
    is($sb->sql1("SELECT credit_id FROM mt5credit.\"case\" "
                 . "WHERE webhook_event_id = $r->{event}"), $credit123,
       'second payment: the case names the credit that already paid it');
}

{
    # the payment credited to dep_000123 reported again for another deposit
    my $other = new_deposit(amount => 50000);
    my $r = ingest(stripe_event(deposit => $other->{ref},
                                pi => 'pi_3QxTestIntent000001'));
    is($r->{outcome}, 'case_opened', 'a credited payment reported for '
       . 'another deposit: case_opened, not already_credited');
    is_deeply(cases("webhook_event_id = $r->{event}"),
              [ 'payment_deposit_mismatch/high' ],
              'payment for two deposits: case payment_deposit_mismatch');
    is(count('mt5_credit', "provider_payment_id = 'pi_3QxTestIntent000001'"),
       1, 'payment for two deposits: still one credit');
    is(count('mt5_credit', "deposit_id = $other->{id}"), 0,
       'payment for two deposits: the other deposit is not credited');
}

{
    $before = snapshot();
    my $r = ingest(stripe_event(type => 'customer.created'));
    is($r->{outcome}, 'stored', 'unmapped event type customer.created: stored');
    my $e = event($r->{event});
    is("$e->{disposition} $e->{type}", 'ignored customer.created',
       'unmapped: disposition ignored, type recorded');
    is(count('mt5_credit') . ' ' . count('case'),
       join(' ', $before =~ /(\d+) credits.* (\d+) cases/),
       'unmapped: no credit, no case');
}

# --- malformed: nothing stored ---------------------------------------------

{
    my @malformed = (
        [ 'a non-JSON body', 'this is not json' ],
        [ 'truncated JSON', '{"id": "evt_truncated", "type": ' ],
        [ 'an empty body', '' ],
        [ 'a JSON array', '[{"id": "evt_in_array", "type": "x"}]' ],
        [ 'a JSON string', '"evt_just_a_string"' ],
        [ 'invalid UTF-8 bytes',
          qq({"id": "evt_bad_utf8_\xff\xfe", "type": "customer.created"}) ],
        [ 'a NUL byte', qq({"id": "evt_nul\x00", "type": "x"}) ],
        [ 'a \\u0000 escape', '{"id": "evt_\\u0000", "type": "x"}' ],
        [ 'no id', '{"type": "checkout.session.completed", "data": {}}' ],
        [ 'a numeric id', '{"id": 12345, "type": "customer.created"}' ],
        [ 'an empty id', '{"id": "", "type": "customer.created"}' ],
        [ 'an id of 256 characters',
          '{"id": "' . ('e' x 256) . '", "type": "customer.created"}' ],
    );
    for my $m (@malformed) {
        my ($what, $body) = @$m;
        my $before = count('webhook_event');
        my $r = ingest($body);
        is("$r->{outcome} $r->{event}", 'malformed ',
           "malformed ($what): outcome malformed, no event row id");
        is(count('webhook_event'), $before,
           "malformed ($what): no webhook_event row stored");
    }
}

# --- amounts that are not a count of minor units ---------------------------

for my $bad ([ 'a float amount (50000.5)', '50000.5' ],
             [ 'a negative amount', '-50000' ],
             [ 'a float with zero fraction (50000.0)', '50000.0' ]) {
    my ($what, $amount) = @$bad;
    my $d = new_deposit();
    my $r = ingest(stripe_event(deposit => $d->{ref}, amount => $amount));
    is($r->{outcome}, 'case_opened', "$what: case_opened");
    is(count('mt5_credit', "deposit_id = $d->{id}"), 0, "$what: no credit");
    is_deeply(cases("webhook_event_id = $r->{event}"),
              [ 'unusable_event/medium' ], "$what: case unusable_event");
}

# --- refunds ----------------------------------------------------------------

{
    my $d = new_deposit();
    my $orig = credited($d, 'pi_refund_full');
    my $body = stripe_event(type => 'charge.refunded', pi => 'pi_refund_full',
                            charge => 'ch_refund_full', amount => 50000);
    my $r = ingest($body);
    is($r->{outcome}, 'credit_created', 'charge.refunded (cumulative, no '
       . 'list) for a credited payment: credit_created');
    my $c = credits("kind = 'refund' AND deposit_id = $d->{id}");
    is(scalar @$c, 1, 'refund: one refund row');
    is_deeply([ @{ $c->[0] }{qw(kind direction original_credit_id mt5_server
                                mt5_login amount_minor currency
                                paid_amount_minor status)} ],
              [ 'refund', 'debit', $orig, 'live1', 1001, 50000, 'USD',
                50000, 'pending' ],
              'refund: a pending debit of 50000 USD on the same login, '
              . 'linked to the original credit');
    is($c->[0]{reference}, payment_ref('rfd', $c->[0]),
       "refund: reference rfd:<its payment's 18 hex digits>");
    is($r->{credit}, $c->[0]{id}, 'refund: ingest() returns its id');

    is(ingest($body)->{outcome}, 'duplicate',
       'the same refund event delivered twice: duplicate');
    my $again = ingest(stripe_event(type => 'charge.refunded',
                                    pi => 'pi_refund_full',
                                    charge => 'ch_refund_full',
                                    amount => 50000));
    is($again->{outcome}, 'stored', 'the same refund under another event id: '
       . 'stored');
    is(count('mt5_credit', "kind = 'refund' AND deposit_id = $d->{id}"), 1,
       'refund delivered twice: still one debit');
}

{
    my $d = new_deposit();
    my $orig = credited($d, 'pi_refund_partial');
    my $part = stripe_event(type => 'charge.refunded',
                            pi => 'pi_refund_partial',
                            charge => 'ch_refund_partial', amount => 20000,
                            charge_amount => 50000);
    is(ingest($part)->{outcome}, 'credit_created',
       'partial refund of 20000: credit_created');
    is(ingest(stripe_event(type => 'charge.refunded',
                           pi => 'pi_refund_partial',
                           charge => 'ch_refund_partial', amount => 50000,
                           charge_amount => 50000))->{outcome},
       'credit_created', 'then cumulative 50000: credit_created');
    my $c = credits("kind = 'refund' AND deposit_id = $d->{id}");
    is_deeply([ map { "$_->{paid_amount_minor}/$_->{amount_minor}" } @$c ],
              [ '20000/20000', '30000/30000' ],
              'partial then cumulative: debits of 20000 then 30000 '
              . '(paid and account amounts)');

    # the 20000 event once more, late, under another id (Stripe retries)
    (my $late = $part) =~ s/"id": "evt_/"id": "evt_late_/;
    my $r = ingest($late);
    is("$r->{outcome} " . event($r->{event})->{disposition},
       'stored already_credited', 'the 20000 total again, late, under '
       . 'another event id: stored, already credited');
    is(count('mt5_credit', "kind = 'refund' AND deposit_id = $d->{id}"), 2,
       'late cumulative total: no third debit');

    # a total below what was already debited (delivered out of order)
    my $r2 = ingest(stripe_event(type => 'charge.refunded',
                                 pi => 'pi_refund_partial',
                                 charge => 'ch_refund_partial',
                                 amount => 35000, charge_amount => 50000));
    is("$r2->{outcome} " . event($r2->{event})->{disposition},
       'stored ignored', 'a cumulative total of 35000 after 50000: stored, '
       . 'ignored');
    is(count('mt5_credit', "kind = 'refund' AND deposit_id = $d->{id}"), 2,
       'out-of-order cumulative total: no debit');
}

{
    my $d = new_deposit();
    credited($d, 'pi_refund_excess');
    my $r = ingest(stripe_event(type => 'charge.refunded',
                                pi => 'pi_refund_excess', amount => 60000,
                                charge_amount => 60000));
    is($r->{outcome}, 'case_opened', 'a cumulative refund above what was '
       . 'paid: case_opened');
    is_deeply(cases("webhook_event_id = $r->{event}"),
              [ 'reversal_exceeds_payment/high' ],
              'refund above payment: case reversal_exceeds_payment');
    is(count('mt5_credit', "kind = 'refund' AND deposit_id = $d->{id}"), 0,
       'refund above payment: no debit');
}

{
    $before = count('mt5_credit');
    my $r = ingest(stripe_event(type => 'charge.refunded',
                                pi => 'pi_never_credited',
                                charge => 'ch_never_credited'));
    is($r->{outcome}, 'case_opened', 'a refund of a payment with no credit: '
       . 'case_opened');
    like(join(',', @{ cases("webhook_event_id = $r->{event}") }),
         qr{^refund\w*_without_credit/high$},
         'refund without credit: case *_without_credit');
    is(count('mt5_credit'), $before, 'refund without credit: no debit');
}

{
    # older API versions list the refunds: one debit per refund object
    my $d = new_deposit();
    credited($d, 'pi_refund_list');
    my %o = (type => 'charge.refunded', pi => 'pi_refund_list',
             charge => 'ch_refund_list', charge_amount => 50000);
    is(ingest(stripe_event(%o, amount => 10000,
                           refunds => [ [ 're_list_1', 10000 ] ]))->{outcome},
       'credit_created', 'listed refund re_1: credit_created');
    my $r = ingest(stripe_event(%o, amount => 25000,
                                refunds => [ [ 're_list_1', 10000 ],
                                             [ 're_list_2', 15000 ],
                                             [ 're_list_3', 5000,
                                               'pending' ] ]));
    is($r->{outcome}, 'credit_created', 're_1 listed again with re_2 and a '
       . 'pending re_3: credit_created');
    is_deeply([ map { "$_->{provider_payment_id} $_->{amount_minor}" }
                @{ credits("kind = 'refund' AND deposit_id = $d->{id}") } ],
              [ 're_list_1 10000', 're_list_2 15000' ],
              'listed refunds: one debit per succeeded refund, none twice');
}

# --- FX: USD paid, EUR account ----------------------------------------------

my $fxq = "SELECT c.fx_rate = d.fx_rate AND c.fx_source = d.fx_source "
        . "AND c.fx_at = d.fx_at FROM mt5credit.mt5_credit c "
        . "JOIN mt5credit.deposit d ON d.id = c.deposit_id WHERE c.id = ";

{
    my $d = new_deposit(login => 1002, rate => '0.92345');
    is($d->{credit}, 46173, 'FX deposit: USD 500.00 at 0.92345 is EUR 461.73');
    my $orig = credited($d, 'pi_fx_full');
    my $c = credits("id = $orig")->[0];
    is_deeply([ @$c{qw(mt5_login amount_minor currency paid_amount_minor
                       paid_currency fx_rate fx_source)} ],
              [ 1002, 46173, 'EUR', 50000, 'USD', '0.92345', 'ecb-ref' ],
              'FX: credited in EUR with the deposit\'s converted amount and '
              . 'rate');
    is($sb->sql1($fxq . $orig), 't', 'FX: rate, source and time copied from '
       . 'the deposit');

    ingest(stripe_event(type => 'charge.refunded', pi => 'pi_fx_full',
                        amount => 50000));
    my $rf = credits("kind = 'refund' AND deposit_id = $d->{id}");
    is_deeply([ map { "$_->{amount_minor} $_->{currency} "
                      . "$_->{paid_amount_minor} $_->{paid_currency}" } @$rf ],
              [ '46173 EUR 50000 USD' ],
              'FX full refund: debits exactly the credited EUR 461.73');
    is($sb->sql1($fxq . $rf->[0]{id}), 't', 'FX refund: the credit\'s rate, '
       . 'never a new one');
}

{
    my $d = new_deposit(login => 1002, rate => '0.92345');
    credited($d, 'pi_fx_parts');
    for my $cum (33333, 50000) {
        ingest(stripe_event(type => 'charge.refunded', pi => 'pi_fx_parts',
                            charge => 'ch_fx_parts', amount => $cum,
                            charge_amount => 50000));
    }
    my $rf = credits("kind = 'refund' AND deposit_id = $d->{id}");
    is_deeply([ map { $_->{paid_amount_minor} } @$rf ], [ 33333, 16667 ],
              'FX two partial refunds: USD 333.33 and 166.67');
    is(sum(map { $_->{amount_minor} } @$rf), 46173,
       'FX two partial refunds: together exactly the credited EUR 461.73');
}

{
    # the return page counts in the currency paid: USD 500.00 paid, EUR
    # 461.73 credited, USD 500.00 refunded is "refunded" (027)
    my $d = new_deposit(login => 1002, rate => '0.92345');
    credited($d, 'pi_fx_state');
    ingest(stripe_event(type => 'charge.refunded', pi => 'pi_fx_state',
                        charge => 'ch_fx_state', amount => 50000,
                        charge_amount => 50000));
    my ($rf) = @{ credits("kind = 'refund' AND deposit_id = $d->{id}") };
    $sb->psql(<<"SQL");
BEGIN;
SELECT set_config('mt5credit.actor', 'test-fixture', true);
UPDATE mt5credit.mt5_credit SET status = 'claimed', attempts = 1,
    claimed_at = now(), claimed_by = 'fixture',
    lease_expires_at = now() + interval '1 minute' WHERE id = $rf->{id};
UPDATE mt5credit.mt5_credit SET status = 'done',
    mt5_deal_ticket = 990000 + $rf->{id} WHERE id = $rf->{id};
COMMIT;
SQL
    is($sb->sql1("SELECT refund_state || ' ' || refunded_minor FROM "
                 . "mt5credit.deposit_refund_state('alice', '$d->{ref}')",
                 user => 'portal'), 'refunded 50000',
       'FX deposit refunded in full: "refunded", USD 500.00, not a part '
       . 'of it in the account\'s EUR');
}

{
    # half refunded, the other half lost in a dispute, then won back
    my $d = new_deposit(login => 1002, rate => '0.92345');
    credited($d, 'pi_fx_mixed');
    ingest(stripe_event(type => 'charge.refunded', pi => 'pi_fx_mixed',
                        amount => 25000, charge_amount => 50000));
    ingest(stripe_event(type => 'charge.dispute.funds_withdrawn',
                        pi => 'pi_fx_mixed', dispute => 'du_fx_mixed',
                        amount => 25000));
    my $rf = credits("kind <> 'deposit' AND deposit_id = $d->{id}");
    is_deeply([ map { "$_->{kind} $_->{paid_amount_minor}" } @$rf ],
              [ 'refund 25000', 'chargeback 25000' ],
              'FX refund of half, chargeback of the other half: both debited');
    is(sum(map { $_->{amount_minor} } @$rf), 46173,
       'FX refund + chargeback: together exactly the credited EUR 461.73');

    ingest(stripe_event(type => 'charge.dispute.funds_reinstated',
                        pi => 'pi_fx_mixed', dispute => 'du_fx_mixed',
                        amount => 25000));
    $rf = credits("kind <> 'deposit' AND deposit_id = $d->{id}");
    is(sum(map { $_->{direction} eq 'debit' ? $_->{amount_minor}
                                            : -$_->{amount_minor} } @$rf),
       $rf->[0]{amount_minor},
       'FX chargeback reinstated: the account has lost exactly the refund');
}

# --- disputes ----------------------------------------------------------------

{
    my $d = new_deposit();
    my $orig = credited($d, 'pi_dispute_1');
    my $r = ingest(stripe_event(type => 'charge.dispute.funds_withdrawn',
                                pi => 'pi_dispute_1', dispute => 'du_one'));
    is($r->{outcome}, 'credit_created',
       'charge.dispute.funds_withdrawn: credit_created');
    my $c = credits("kind = 'chargeback' AND deposit_id = $d->{id}");
    is_deeply([ map { join ' ', @$_{qw(direction original_credit_id
                                       amount_minor currency)} } @$c ],
              [ "debit $orig 50000 USD" ],
              'funds_withdrawn: one chargeback debit of the payment');
    is($c->[0]{reference}, payment_ref('cbk', $c->[0]),
       "chargeback: reference cbk:<its payment's 18 hex digits>");

    my $closed = ingest(stripe_event(type => 'charge.dispute.closed',
                                     pi => 'pi_dispute_1',
                                     dispute => 'du_one', status => 'lost'));
    is($closed->{outcome}, 'stored', 'charge.dispute.closed (lost) for the '
       . 'same dispute afterwards: stored');
    is(count('mt5_credit', "kind = 'chargeback' AND deposit_id = $d->{id}"),
       1, 'closed (lost) after funds_withdrawn: no second debit');
}

{
    my $d = new_deposit();
    credited($d, 'pi_dispute_first_closed');
    is(ingest(stripe_event(type => 'charge.dispute.closed',
                           pi => 'pi_dispute_first_closed',
                           dispute => 'du_first', status => 'lost'))
       ->{outcome}, 'credit_created',
       'closed (lost) arriving first: credit_created');
    is(ingest(stripe_event(type => 'charge.dispute.funds_withdrawn',
                           pi => 'pi_dispute_first_closed',
                           dispute => 'du_first'))->{outcome}, 'stored',
       'funds_withdrawn after it: stored');
    is(count('mt5_credit', "kind = 'chargeback' AND deposit_id = $d->{id}"),
       1, 'whichever comes first: one debit');
}

{
    my $d = new_deposit();
    my $orig = credited($d, 'pi_dispute_won');
    ingest(stripe_event(type => 'charge.dispute.funds_withdrawn',
                        pi => 'pi_dispute_won', dispute => 'du_won'));
    my $r = ingest(stripe_event(type => 'charge.dispute.funds_reinstated',
                                pi => 'pi_dispute_won', dispute => 'du_won'));
    is($r->{outcome}, 'credit_created', 'funds_reinstated after a '
       . 'withdrawal: credit_created');
    my $c = credits("kind = 'chargeback' AND deposit_id = $d->{id}");
    is_deeply([ map { "$_->{direction} $_->{original_credit_id} "
                      . "$_->{amount_minor}" } @$c ],
              [ "debit $orig 50000", "credit $orig 50000" ],
              'reinstated: a chargeback credit of the same amount, linked '
              . 'to the payment');
    is($c->[1]{reference}, payment_ref('cbr', $c->[1]),
       "reinstated: reference cbr:<its payment's 18 hex digits>");

    my $won = ingest(stripe_event(type => 'charge.dispute.closed',
                                  pi => 'pi_dispute_won', dispute => 'du_won',
                                  status => 'won'));
    is("$won->{outcome} " . event($won->{event})->{disposition},
       'stored ignored', 'charge.dispute.closed (won): stored, ignored');
    is(count('mt5_credit', "deposit_id = $d->{id}"), 3,
       'closed (won): nothing new');
}

{
    my $d = new_deposit();
    credited($d, 'pi_dispute_reinstated_only');
    my $r = ingest(stripe_event(type => 'charge.dispute.funds_reinstated',
                                pi => 'pi_dispute_reinstated_only',
                                dispute => 'du_nothing_withdrawn'));
    is($r->{outcome}, 'case_opened', 'funds_reinstated without a '
       . 'withdrawal: case_opened');
    is_deeply(cases("webhook_event_id = $r->{event}"),
              [ 'chargeback_reversal_without_debit/high' ],
              'reinstated without withdrawal: case '
              . 'chargeback_reversal_without_debit');
    is(count('mt5_credit', "kind = 'chargeback' AND deposit_id = $d->{id}"),
       0, 'reinstated without withdrawal: no credit');
}

{
    # the vectors on dep_000123: refunded in full, then lost in a dispute
    my $r = ingest(vector('valid/charge.refunded'));
    is($r->{outcome}, 'credit_created', 'vector charge.refunded for '
       . 'dep_000123: credit_created');
    is_deeply([ map { "$_->{direction} $_->{original_credit_id} "
                      . "$_->{amount_minor} $_->{provider_payment_id}" }
                @{ credits("kind = 'refund' AND deposit_id = 123") } ],
              [ "debit $credit123 50000 ch_3QxTestCharge000001:refunded:50000" ],
              'vector charge.refunded: one refund debit of USD 500.00');
    my $lost = ingest(vector('valid/charge.dispute.closed-lost'));
    is($lost->{outcome}, 'case_opened', 'vector charge.dispute.closed (lost) '
       . 'after a full refund: case_opened');
    is_deeply(cases("webhook_event_id = $lost->{event}"),
              [ 'reversal_exceeds_payment/high' ],
              'a refunded payment lost in a dispute: case '
              . 'reversal_exceeds_payment');
    is(count('mt5_credit', "kind = 'chargeback' AND deposit_id = 123"), 0,
       'refunded, then lost: no second debit');
}

# --- the generic payload (Standard Webhooks PSP) -----------------------------

{
    my $d = new_deposit(provider => 'acmepay');
    my $r = ingest(standard_event(type => 'payment.succeeded',
                                  payment => 'ap_pay_0001',
                                  deposit => $d->{ref}),
                   provider => 'acmepay', event_id => 'msg_acme_0001');
    is($r->{outcome}, 'credit_created', 'acmepay payment.succeeded: '
       . 'credit_created');
    my $c = credits("deposit_id = $d->{id}");
    is_deeply([ map { "$_->{kind} $_->{provider} $_->{provider_payment_id} "
                      . "$_->{amount_minor} $_->{currency}" } @$c ],
              [ 'deposit acmepay ap_pay_0001 50000 USD' ],
              'acmepay: one deposit credit keyed by its payment id');
    is(event($r->{event})->{event_id}, 'msg_acme_0001',
       'acmepay: the event is stored under the id passed by the edge');
    is(ingest(standard_event(type => 'payment.succeeded',
                             payment => 'ap_pay_0001',
                             deposit => $d->{ref}),
              provider => 'acmepay', event_id => 'msg_acme_0001')->{outcome},
       'duplicate', 'acmepay: the same webhook-id and body again: duplicate');

    my $rf = ingest(standard_event(type => 'payment.refunded',
                                   payment => 'ap_pay_0001',
                                   refund => 'ap_rf_0001'),
                    provider => 'acmepay', event_id => 'msg_acme_0002');
    is($rf->{outcome}, 'credit_created', 'acmepay payment.refunded: '
       . 'credit_created');
    is_deeply([ map { "$_->{kind} $_->{direction} $_->{original_credit_id} "
                      . "$_->{provider_payment_id} $_->{amount_minor}" }
                @{ credits("kind = 'refund' AND deposit_id = $d->{id}") } ],
              [ "refund debit $c->[0]{id} refund:ap_rf_0001 50000" ],
              'acmepay: one refund debit linked to the payment');

    my $s = new_deposit(provider => 'stripe');
    my $x = ingest(standard_event(type => 'payment.succeeded',
                                  payment => 'ap_pay_0002',
                                  deposit => $s->{ref}),
                   provider => 'acmepay', event_id => 'msg_acme_0003');
    is($x->{outcome}, 'case_opened', 'a stripe deposit paid via acmepay: '
       . 'case_opened');
    is_deeply(cases("deposit_id = $s->{id}"), [ 'amount_mismatch/high' ],
              'provider mismatch: case amount_mismatch');
    is(count('mt5_credit', "deposit_id = $s->{id}"), 0,
       'provider mismatch: no credit');
}

# --- sql/060: the same rows, written once -------------------------------------
{
    # one transaction, its own table counters: what one paid event wrote
    my $dep = new_deposit();
    my $body = stripe_event(type => 'payment_intent.succeeded',
                            deposit => $dep->{ref}, pi => 'pi_once',
                            amount => 50000, currency => 'usd');
    my $rows = $sb->psql(<<"SQL");
BEGIN;
SET LOCAL ROLE edge;
SELECT outcome, credit_id, event_row_id FROM mt5credit.ingest('stripe', NULL,
    @{[ hexlit($body) ]}, 'stripe', $SIGNED_AT);
RESET ROLE;
SELECT relname || ' ' || n_tup_ins || ' ' || n_tup_upd
FROM pg_stat_xact_user_tables
WHERE schemaname = 'mt5credit' AND n_tup_ins + n_tup_upd > 0
ORDER BY relname;
COMMIT;
SQL
    my ($outcome, $credit, $event) = @{ shift @$rows };
    is($outcome, 'credit_created', 'a paid event (060\'s path)');
    is(join(', ', map { $_->[0] } @$rows),
       'credit_history 1 0, deposit 0 1, deposit_history 1 0, '
       . 'journal 3 0, mt5_credit 1 0, webhook_event 1 0',
       '... wrote its event once, naming its credit: no second write of the '
       . 'event, one update of the deposit, and the three facts\' journal '
       . 'entries (081)');
    is_deeply(event($event), { disposition => 'credit_created',
                               credit => $credit,
                               type => 'payment_intent.succeeded',
                               event_id => event($event)->{event_id} },
              '... the event names the credit made');
    is($sb->sql1("SELECT to_status || ' ' || (detail->>'credit') || ' '"
                 . " || (detail->>'payment') || ' ' || (detail->>'source')"
                 . " FROM mt5credit.deposit_history WHERE deposit_id = "
                 . "$dep->{id} ORDER BY id DESC LIMIT 1"),
       "succeeded $credit pi_once credit:$credit",
       '... and the deposit\'s history says which credit and payment paid it');
    is($sb->sql1("SELECT reference FROM mt5credit.mt5_credit WHERE id = "
                 . "$credit"),
       'dep:' . substr(sha256_hex('stripe:pi_once'), 0, 18),
       "... under its payment's reference");

    # an event that ends otherwise is rewritten as it ended, its drawn id
    # left as a gap
    my $ign = ingest(stripe_event(type => 'customer.created',
                                  deposit => $dep->{ref}, pi => 'pi_none'));
    is_deeply([ @{ event($ign->{event}) }{qw(disposition credit)} ],
              [ 'ignored', '' ], 'an ignored event names no credit');
    my $again = ingest(stripe_event(type => 'checkout.session.completed',
                                    deposit => $dep->{ref}, pi => 'pi_once',
                                    amount => 50000, currency => 'usd'));
    is("$again->{outcome} " . event($again->{event})->{disposition} . ' '
       . event($again->{event})->{credit}, "stored already_credited $credit",
       'the same payment by another event: already credited, naming the '
       . 'first credit');

    # the event's key to its credit is checked at commit, never skipped
    like($sb->psql("UPDATE mt5credit.webhook_event SET credit_id = "
                   . "9223372036854775807 WHERE id = $event", may_fail => 1),
         qr/webhook_event_credit_id_fkey/,
         'an event naming a credit that does not exist is refused at commit');

    # a deposit already marked paid by the provider query: unchanged, no
    # second history row
    my $dq = new_deposit();
    $sb->psql("SELECT mt5credit.deposit_observe($dq->{id}, 'succeeded', "
              . "'query:test')");
    my $paid = ingest(stripe_event(type => 'payment_intent.succeeded',
                                   deposit => $dq->{ref}, pi => 'pi_after_q',
                                   amount => 50000, currency => 'usd'));
    is($paid->{outcome}, 'credit_created',
       'a deposit the provider query already saw succeed is credited');
    is(count('deposit_history', "deposit_id = $dq->{id}"), 1,
       '... and its status, already succeeded, is not written again');
}

# --- what the edge sees ------------------------------------------------------

is(scalar(grep { $_->{rows} != 1 || $_->{fields} != 4 } @answers), 0,
   'every one of ' . scalar(@answers) . ' ingest() calls answered exactly '
   . 'one row of four fields');
for my $sig ('text,text,bytea,text,bigint', 'text,text,bytea,text,bigint,text') {
    is($sb->sql1("SELECT pg_get_function_result("
                 . "'mt5credit.ingest($sig)'::regprocedure)"),
       'TABLE(outcome text, credit_id bigint, event_row_id bigint, detail text)',
       "ingest($sig) returns only outcome, credit_id, event_row_id and detail");
}
is($sb->sql1("SELECT pg_get_function_result('mt5credit.ingest_batch("
             . "text[],text[],bytea[],text[],bigint[],text[])'::regprocedure)"),
   'TABLE(ord integer, outcome text, credit_id bigint, event_row_id bigint, '
   . 'detail text, error_code text, error_message text)',
   'ingest_batch() returns only what ingest() does, per element, with its '
   . 'position and error');
# the edge's, the older edge's without a request id (sql/051), and the
# batch of several (sql/062)
is(join(',', map { $_->[0] } @{ $sb->psql(<<'SQL') }),
SELECT p.oid::regprocedure FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'mt5credit'
  AND has_function_privilege('edge', p.oid, 'EXECUTE')
ORDER BY 1::text
SQL
   'mt5credit.ingest(text,text,bytea,text,bigint),'
   . 'mt5credit.ingest(text,text,bytea,text,bigint,text),'
   . 'mt5credit.ingest_batch(text[],text[],bytea[],text[],bigint[],text[])',
   'ingest() and ingest_batch() are the only functions the edge role may '
   . 'execute');
for my $t ('deposit', 'mt5_credit', 'webhook_event', '"case"') {
    like($sb->psql("SELECT count(*) FROM mt5credit.$t", user => 'edge',
                   may_fail => 1),
         qr/permission denied/, "after all that, the edge still cannot read $t");
}
is(join(' | ', grep { /alice|live1|\b100[12]\b/ } map { $_->{detail} }
        @answers), '',
   'no detail returned to the edge names a client, server or login');
is(scalar(grep { $_->{detail} =~ /"amount_total"|checkout\.session"/ }
          @answers), 0, 'no answer echoes a stored body');

done_testing;
