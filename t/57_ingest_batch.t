#!/usr/bin/perl
#
# ingest_batch() (sql/062), the webhooks waiting on one edge connection
# in one transaction, makes these impossible:
#   - a batch leaving any row other than ingest() would: the same
#     deliveries one by one in one database and as one batch in another
#     leave the same events, conflicts, malformed deliveries, credits,
#     credit history (its actor per row), deposits, deposit history and
#     cases
#   - one webhook's failure failing another: an element whose ingest()
#     raises gets its own error and leaves nothing; the rest their results
#   - order lost: a status report and a payment of one deposit, a payment
#     and its refund, two deliveries of one event, in one batch, end as
#     they end one after the other
#   - the set-based part leaving half its work: when its statement raises,
#     every one of its elements goes through ingest() and ends the same
#   - a provider's own format read two ways: Checkout.com's events
#     (sql/075), Coinbase Commerce's (sql/076: the event nested, a retry
#     in another envelope) and Adyen's items (sql/077: the edge's id)
#     leave in a batch what they leave one by one
#   - a risk rule judging a batch otherwise than one by one (sql/079): a
#     credit sees the credits of the elements before it, not after
#   - a deadlock between two batches failing more than one webhook: one
#     delivery gets 40P01 (its provider retries), the rest of both commit
#   - a caller choosing the history's actor through the batch's map:
#     ingest() writes its own actor whatever the map says
#   - the edge's other roles calling it: only mt5credit_ingest may

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event standard_event coinbase_event);

my $SIGNED_AT = 1767225600;

# one: one by one; batch: as batches
my %db = (one => Mt5Credit::Sandbox->new, batch => Mt5Credit::Sandbox->new);
$_->start_postgres for values %db;

sub bytes {
    my ($s) = @_;
    utf8::encode($s) if utf8::is_utf8($s);
    return $s;
}

sub hexlit { return "'\\x" . unpack('H*', bytes($_[0])) . "'::bytea" }
sub lit { return defined $_[0] ? "'$_[0]'" : 'NULL' }

# the same accounts and deposits, in the same order, in both
for my $sb (values %db) {
    $sb->psql(<<'SQL', user => 'portal');
SELECT mt5credit.register_account('alice', 'live1', 1001, 'USD');
SQL
    for my $n (1 .. 20) {
        my $provider = $n == 10 ? 'acmepay' : 'stripe';
        $sb->psql("SELECT mt5credit.create_deposit('alice', "
                  . sprintf("'click-%06d'", $n) . ", '$provider', 'live1', "
                  . "1001, 50000, 'USD')", user => 'portal');
    }
}

sub dep { return sprintf('dep_%06d', $_[0]) }

# a delivery: { provider, event_id, body, scheme, request_id }
sub delivery {
    my ($body, %o) = @_;
    my $provider = $o{provider} || 'stripe';
    return { provider => $provider, event_id => $o{event_id},
             body => $body,
             scheme => $provider eq 'stripe' ? 'stripe' : 'standard',
             request_id => $o{request_id} };
}

sub paid {
    my ($n, %o) = @_;
    return stripe_event(type => 'payment_intent.succeeded',
                        deposit => $o{ref} // dep($n),
                        pi => $o{pi} || "pi_batch_$n",
                        id => $o{id} || "evt_batch_$n",
                        amount => $o{amount} // 50000);
}

# ingest() as the edge calls it: { outcome, credit, event, detail } or
# { error }
sub ingest_one {
    my ($sb, $d) = @_;
    my $r = $sb->psql("SELECT outcome, credit_id, event_row_id, detail "
        . "FROM mt5credit.ingest(" . lit($d->{provider}) . ', '
        . lit($d->{event_id}) . ', ' . hexlit($d->{body}) . ', '
        . lit($d->{scheme}) . ", $SIGNED_AT, " . lit($d->{request_id}) . ')',
        user => 'edge', may_fail => 1);
    return { error => $r } unless ref $r;
    my ($outcome, $credit, $event, $detail) = @{ $r->[0] };
    return { outcome => $outcome, credit => $credit, event => $event,
             detail => $detail };
}

# ingest_batch() as the edge calls it: one result per delivery, in order
sub ingest_batch {
    my ($sb, @d) = @_;
    my $arr = sub {
        my ($key, $type) = @_;
        return 'ARRAY[' . join(', ', map {
            $key eq 'body' ? hexlit($_->{body})
            : $key eq 'signed_at' ? $SIGNED_AT : lit($_->{$key}) } @d)
            . "]::$type";
    };
    my $rows = $sb->psql("SELECT ord, coalesce(outcome, ''), "
        . "coalesce(credit_id::text, ''), coalesce(event_row_id::text, ''), "
        . "coalesce(detail, ''), coalesce(error_code, ''), "
        . "coalesce(error_message, '') FROM mt5credit.ingest_batch("
        . join(', ', $arr->('provider', 'text[]'), $arr->('event_id', 'text[]'),
               $arr->('body', 'bytea[]'), $arr->('scheme', 'text[]'),
               $arr->('signed_at', 'bigint[]'),
               $arr->('request_id', 'text[]'))
        . ') ORDER BY ord', user => 'edge');
    return map {
        my ($ord, $outcome, $credit, $event, $detail, $code, $msg) = @$_;
        $code ne ''
            ? { ord => $ord, error => $msg, code => $code }
            : { ord => $ord, outcome => $outcome, credit => $credit,
                event => $event, detail => $detail }
    } @$rows;
}

# what a result says, without the ids a database draws
sub said {
    my ($r) = @_;
    return 'error' if defined $r->{error};
    (my $detail = $r->{detail} // '') =~ s/\d+/N/g;
    return join '/', $r->{outcome}, $r->{credit} ne '' ? 'credit' : '-',
                     $r->{event} ne '' ? 'event' : '-', $detail;
}

# every table ingest() writes, by natural keys, ids drawn left out
my %DUMP = (
    events => <<'SQL',
SELECT e.provider, e.provider_event_id, coalesce(e.event_type, ''),
       encode(e.body_sha256, 'hex'), e.signature_scheme,
       coalesce(e.signed_at::text, ''), e.disposition,
       coalesce(regexp_replace(e.detail, '\d+', 'N', 'g'), ''),
       coalesce(e.request_id, ''),
       coalesce(c.provider || ':' || c.provider_payment_id, '')
FROM mt5credit.webhook_event e
LEFT JOIN mt5credit.mt5_credit c ON c.id = e.credit_id
ORDER BY 1, 2
SQL
    conflicts => <<'SQL',
SELECT e.provider_event_id, encode(x.body_sha256, 'hex'), x.signature_scheme,
       coalesce(x.request_id, '')
FROM mt5credit.webhook_event_conflict x
JOIN mt5credit.webhook_event e ON e.id = x.event_id
ORDER BY 1, 2
SQL
    malformed => <<'SQL',
SELECT provider, encode(body_sha256, 'hex'), signature_scheme, reason,
       deliveries, coalesce(first_request_id, ''), coalesce(last_request_id, '')
FROM mt5credit.webhook_malformed
ORDER BY 1, 2
SQL
    credits => <<'SQL',
SELECT c.kind, c.direction, c.provider, c.provider_payment_id,
       coalesce(d.reference, ''), c.mt5_server, c.mt5_login, c.amount_minor,
       c.currency, c.paid_amount_minor, c.paid_currency, c.status,
       c.attempts, split_part(c.reference, ':', 1),
       coalesce(o.provider_payment_id, '')
FROM mt5credit.mt5_credit c
LEFT JOIN mt5credit.deposit d ON d.id = c.deposit_id
LEFT JOIN mt5credit.mt5_credit o ON o.id = c.original_credit_id
ORDER BY 3, 4
SQL
    credit_history => <<'SQL',
SELECT c.provider, c.provider_payment_id, coalesce(h.from_status, ''),
       h.to_status, h.attempts, h.actor,
       regexp_replace(h.detail::text, '\d+', 'N', 'g')
FROM mt5credit.credit_history h
JOIN mt5credit.mt5_credit c ON c.id = h.credit_id
ORDER BY 1, 2, h.id
SQL
    deposits => <<'SQL',
SELECT reference, provider, status, amount_minor
FROM mt5credit.deposit
ORDER BY 1
SQL
    deposit_history => <<'SQL',
SELECT d.reference, h.from_status, h.to_status, h.actor,
       coalesce(h.detail->>'payment', ''),
       coalesce(c.provider_payment_id, ''),
       regexp_replace(h.detail::text, '\d+', 'N', 'g')
FROM mt5credit.deposit_history h
JOIN mt5credit.deposit d ON d.id = h.deposit_id
LEFT JOIN mt5credit.mt5_credit c
       ON c.id = (h.detail->>'credit')::bigint
      AND h.detail->>'source' = 'credit:' || c.id
ORDER BY 1, h.id
SQL
    cases => <<'SQL',
SELECT k.kind, k.severity, k.status,
       regexp_replace(k.dedupe_key, '\d+', 'N', 'g'),
       coalesce(d.reference, ''), coalesce(c.provider_payment_id, ''),
       coalesce(e.provider_event_id, '')
FROM mt5credit."case" k
LEFT JOIN mt5credit.deposit d ON d.id = k.deposit_id
LEFT JOIN mt5credit.mt5_credit c ON c.id = k.credit_id
LEFT JOIN mt5credit.webhook_event e ON e.id = k.webhook_event_id
ORDER BY 1, 4, 5, 7
SQL
);

sub same_rows {
    my ($what) = @_;
    for my $t (sort keys %DUMP) {
        my $one = $db{one}->psql($DUMP{$t});
        my $batch = $db{batch}->psql($DUMP{$t});
        is_deeply($batch, $one, "$what: $t the same as one by one ("
                  . scalar(@$one) . ' rows)');
    }
}

# --- before: a deposit already credited, in both ---------------------------

my $pre = delivery(paid(9, id => 'evt_pre_9', pi => 'pi_pre_9'),
                   request_id => 'a' x 32);
for my $sb (values %db) {
    is(ingest_one($sb, $pre)->{outcome}, 'credit_created',
       'setup: dep_000009 credited before the batch');
}

# --- one batch of every kind of delivery ---------------------------------

my $rid = '0123456789abcdef0123456789abcdef';
my @batch = (
    # 1-3: paid, each its own deposit: the set-based way
    delivery(paid(1), request_id => $rid),
    delivery(stripe_event(type => 'checkout.session.completed',
                          deposit => dep(2), pi => 'pi_batch_2',
                          id => 'evt_batch_2')),
    delivery(paid(3), request_id => 'not-a-request-id'),
    # 4: not JSON
    delivery("not json {"),
    # 5: paid, the wrong amount: a case
    delivery(paid(4, amount => 40000)),
    # 6-7: processing, then paid, of one deposit
    delivery(qq({"id": "evt_batch_5p", "object": "event", "type": )
             . qq("payment_intent.processing", "data": {"object": )
             . qq({"id": "pi_batch_5", "object": "payment_intent", )
             . qq("amount": 50000, "currency": "usd", "metadata": )
             . qq({"deposit_id": "@{[ dep(5) ]}"}, "status": "processing"}}})),
    delivery(paid(5)),
    # 8: no such deposit
    delivery(paid(999, ref => 'dep_999999')),
    # 9-10: a payment and its refund in one batch
    delivery(paid(6, pi => 'pi_batch_6')),
    delivery(stripe_event(type => 'charge.refunded', pi => 'pi_batch_6',
                          id => 'evt_batch_6r', charge => 'ch_batch_6',
                          refunds => [ [ 're_batch_6', 50000 ] ])),
    # 11: the delivery of before, again; 12: another payment of its deposit
    $pre,
    delivery(paid(9, id => 'evt_batch_9b', pi => 'pi_batch_9b')),
    # 13: a provider name no event may carry: ingest() raises
    delivery(paid(7), provider => 'Bad Provider'),
    # 14: a Standard Webhooks provider's payment
    delivery(standard_event(type => 'payment.succeeded', deposit => dep(10),
                            payment => 'pay_acme_10'),
             provider => 'acmepay', event_id => 'msg_acme_10'),
    # 15: paid; 16-17: one event delivered twice in the batch
    delivery(paid(11)),
    delivery(paid(12)),
    delivery(paid(12)),
    # 18: the delivery of before, with other bytes: a conflict
    delivery(paid(9, id => 'evt_pre_9', pi => 'pi_pre_9', amount => 50001)),
);

my @one = map { ingest_one($db{one}, $_) } @batch;
my @got = ingest_batch($db{batch}, @batch);

is(scalar @got, scalar @batch, 'one result per delivery');
is_deeply([ map { $_->{ord} } @got ], [ 1 .. @batch ],
          'the results come in the deliveries\' order');
is_deeply([ map { said($_) } @got ], [ map { said($_) } @one ],
          'each delivery\'s result is what ingest() returned for it');
is_deeply([ map { said($_) } @got[0 .. 2] ],
          [ ('credit_created/credit/event/') x 3 ],
          'the payments of their own deposits made their credits');
is($got[12]{code}, '23514', 'the bad provider\'s delivery failed alone, '
   . 'with its SQLSTATE (a CHECK)');
like($one[12]{error}, qr/\Q$got[12]{error}\E/,
     'with the message ingest() raises');
is_deeply([ map { $_->{outcome} } @got[5, 6] ],
          [ 'stored', 'credit_created' ],
          'processing then paid of one deposit: as one after the other');
is($got[9]{outcome}, 'credit_created', 'the refund made its debit after '
   . 'the payment in the same batch');
is_deeply([ map { $_->{outcome} } @got[15, 16] ],
          [ 'credit_created', 'duplicate' ],
          'one event twice in a batch: credited once, then a duplicate');
is($got[16]{credit}, $got[15]{credit},
   'the duplicate names the credit of the first delivery');
is($got[10]{outcome}, 'duplicate', 'the delivery of before: a duplicate');
same_rows('a mixed batch');

# the set-based part ran: the paid events made their credits in it
my $actors = $db{batch}->psql(<<'SQL');
SELECT h.actor FROM mt5credit.credit_history h
JOIN mt5credit.mt5_credit c ON c.id = h.credit_id
WHERE c.provider_payment_id IN ('pi_batch_1', 'pi_batch_2', 'pi_batch_3',
                                'pay_acme_10', 'pi_batch_11')
ORDER BY c.provider_payment_id
SQL
is_deeply([ map { $_->[0] } @$actors ],
          [ 'ingest:acmepay:msg_acme_10', 'ingest:stripe:evt_batch_1',
            'ingest:stripe:evt_batch_11', 'ingest:stripe:evt_batch_2',
            'ingest:stripe:evt_batch_3' ],
          'each credit of the set-based part has its own event\'s actor');
my $ids = $db{batch}->psql(<<'SQL');
SELECT max(c.id) - min(c.id), count(*)
FROM mt5credit.mt5_credit c
WHERE c.provider_payment_id IN ('pi_batch_1', 'pi_batch_2', 'pi_batch_3',
                                'pay_acme_10', 'pi_batch_11')
SQL
is_deeply($ids->[0], [ 4, 5 ], 'and they were drawn together, first: five '
          . 'consecutive credit ids');

# --- the set-based statement raising -------------------------------------

# a trigger only the batch's statement meets: it raises there
$db{batch}->psql(<<'SQL');
CREATE FUNCTION mt5credit.test_boom() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.provider_event_id = 'evt_boom'
       AND current_setting('mt5credit.actor', true) = 'ingest:batch'
    THEN
        RAISE EXCEPTION 'boom in the set-based statement';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER test_boom BEFORE INSERT ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION mt5credit.test_boom();
SQL

my @boom = (delivery(paid(13)), delivery(paid(14, id => 'evt_boom')),
            delivery(paid(15)));
@one = map { ingest_one($db{one}, $_) } @boom;
@got = ingest_batch($db{batch}, @boom);
is_deeply([ map { said($_) } @got ],
          [ ('credit_created/credit/event/') x 3 ],
          'the set-based statement raised: each delivery still made its '
          . 'credit, through ingest()');
same_rows('after the set-based part rolled back');
my $gap = $db{batch}->sql1(<<'SQL');
SELECT count(*) FROM mt5credit.credit_history h
JOIN mt5credit.mt5_credit c ON c.id = h.credit_id
WHERE c.provider_payment_id IN ('pi_batch_13', 'pi_batch_14', 'pi_batch_15')
  AND h.actor = 'ingest:batch'
SQL
is($gap, 0, 'no history row kept the batch\'s marker as its actor');

# --- Checkout.com's own events (sql/075) --------------------------------

sub cko {
    my ($type, $id, %data) = @_;
    my $data = join(',', map {
        qq("$_":) . ($_ eq 'amount' ? $data{$_} : qq("$data{$_}"))
    } sort keys %data);
    return { provider => 'checkout', event_id => undef, scheme => 'hmac-sha256',
             request_id => undef,
             body => qq({"id":"$id","type":"$type","data":{$data}}) };
}

for my $sb (values %db) {
    $sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
              . "('checkout', 'checkout')");
    for my $n (21 .. 23) {
        $sb->psql("SELECT mt5credit.create_deposit('alice', "
                  . sprintf("'click-%06d'", $n) . ", 'checkout', 'live1', "
                  . "1001, 50000, 'USD')", user => 'portal');
    }
}

my @cko = (
    # 1: a capture, its own deposit: the set-based way
    cko('payment_captured', 'evt_cko_1', id => 'pay_cko_21',
        action_id => 'act_c21', reference => dep(21), amount => 50000,
        currency => 'USD'),
    # 2-3: approved, then captured, of one deposit
    cko('payment_approved', 'evt_cko_2', id => 'pay_cko_22',
        action_id => 'act_a22', reference => dep(22), amount => 50000,
        currency => 'USD'),
    cko('payment_captured', 'evt_cko_3', id => 'pay_cko_22',
        action_id => 'act_c22', reference => dep(22), amount => 50000,
        currency => 'USD'),
    # 4: a capture of another amount: a case
    cko('payment_captured', 'evt_cko_4', id => 'pay_cko_23',
        action_id => 'act_c23', reference => dep(23), amount => 49999,
        currency => 'USD'),
    # 5-6: the first payment refunded in part, and disputed
    cko('payment_refunded', 'evt_cko_5', id => 'pay_cko_21',
        action_id => 'act_r21', reference => dep(21), amount => 1000,
        currency => 'USD'),
    cko('dispute_evidence_required', 'evt_cko_6', id => 'dsp_cko_21',
        payment_id => 'pay_cko_21', amount => 49000, currency => 'USD'),
    # 7: a type with no meaning
    cko('card_verified', 'evt_cko_7', id => 'src_cko', currency => 'USD'),
);
@one = map { ingest_one($db{one}, $_) } @cko;
@got = ingest_batch($db{batch}, @cko);
is_deeply([ map { said($_) } @got ], [ map { said($_) } @one ],
          'Checkout.com: the batch said what ingest() said');
is_deeply([ map { $_->{outcome} } @got ],
          [ 'credit_created', 'stored', 'credit_created', 'case_opened',
            'credit_created', 'credit_created', 'stored' ],
          'Checkout.com: a capture, an approval then a capture, another '
          . 'amount, a refund, a dispute, a card check');
same_rows('Checkout.com\'s events');

# --- Coinbase Commerce's own events (sql/076) ---------------------------

# a delivery as the provider simulator builds it (coinbase_event())
sub cb {
    my ($type, $eid, %c) = @_;
    my $n = 0;
    return { provider => 'coinbase', event_id => undef,
             scheme => 'hmac-sha256', request_id => undef,
             body => coinbase_event($type, event_id => $eid,
                 charge => $c{charge}, deposit => $c{deposit},
                 price => $c{price}, attempt => $c{attempt},
                 payments => [ map { [ ++$n, $_ ] } @{ $c{paid} } ],
                 timeline => [ map { [ $_ ] } @{ $c{timeline} } ]) };
}

for my $sb (values %db) {
    $sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
              . "('coinbase', 'coinbase')");
    for my $n (24 .. 27) {
        $sb->psql("SELECT mt5credit.create_deposit('alice', "
                  . sprintf("'click-%06d'", $n) . ", 'coinbase', 'live1', "
                  . "1001, 50000, 'USD')", user => 'portal');
    }
}

my @cb = (
    # 1: confirmed, paid once in full: the set-based way
    cb('charge:confirmed', 'cb-evt-1', charge => 'cb-31', deposit => dep(24),
       price => '500.00', paid => [ '500.00' ],
       timeline => [ 'NEW', 'PENDING', 'COMPLETED' ]),
    # 2: its retry in the same batch: another envelope, the same event
    cb('charge:confirmed', 'cb-evt-1', charge => 'cb-31', deposit => dep(24),
       price => '500.00', paid => [ '500.00' ], attempt => 2,
       timeline => [ 'NEW', 'PENDING', 'COMPLETED' ]),
    # 3-4: pending, then confirmed, of one deposit
    cb('charge:pending', 'cb-evt-3', charge => 'cb-32', deposit => dep(25),
       price => '500.00', paid => [], timeline => [ 'NEW', 'PENDING' ]),
    cb('charge:confirmed', 'cb-evt-4', charge => 'cb-32', deposit => dep(25),
       price => '500.00', paid => [ '500.00' ],
       timeline => [ 'NEW', 'PENDING', 'COMPLETED' ]),
    # 5: paid short: a review case
    cb('charge:confirmed', 'cb-evt-5', charge => 'cb-33', deposit => dep(26),
       price => '500.00', paid => [ '499.99' ],
       timeline => [ 'NEW', 'COMPLETED' ]),
    # 6: paid late: a review case
    cb('charge:delayed', 'cb-evt-6', charge => 'cb-34', deposit => dep(27),
       price => '500.00', paid => [ '500.00' ],
       timeline => [ 'NEW', 'EXPIRED', 'UNRESOLVED' ]),
    # 7: a charge opened
    cb('charge:created', 'cb-evt-7', charge => 'cb-35', deposit => dep(27),
       price => '500.00', paid => [], timeline => [ 'NEW' ]),
);
@one = map { ingest_one($db{one}, $_) } @cb;
@got = ingest_batch($db{batch}, @cb);
is_deeply([ map { said($_) } @got ], [ map { said($_) } @one ],
          'Coinbase Commerce: the batch said what ingest() said');
is_deeply([ map { $_->{outcome} } @got ],
          [ 'credit_created', 'duplicate', 'stored', 'credit_created',
            'case_opened', 'case_opened', 'stored' ],
          'Coinbase Commerce: a payment, its retry, pending then paid, '
          . 'paid short, paid late, a charge opened');
same_rows('Coinbase Commerce\'s events');

# --- Adyen's notification items (sql/077) -------------------------------

# an item as the edge stores it: its bytes, the edge's id
sub ady {
    my ($code, %f) = @_;
    my $body = '{"additionalData":{"hmacSignature":"x"},"amount":{"value":'
        . ($f{value} // 50000) . ',"currency":"USD"},"eventCode":"' . $code
        . '","merchantAccountCode":"BrokerEU","merchantReference":"'
        . ($f{ref} // '') . '",' . (defined $f{original}
            ? qq("originalReference":"$f{original}",) : '')
        . '"pspReference":"' . $f{psp} . '","success":"'
        . ($f{success} // 'true') . '"}';
    return { provider => 'adyen', scheme => 'adyen', request_id => undef,
             event_id => "$f{psp}:$code:" . ($f{success} // 'true'),
             body => $body };
}

for my $sb (values %db) {
    $sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
              . "('adyen', 'adyen')");
    for my $n (28 .. 30) {
        $sb->psql("SELECT mt5credit.create_deposit('alice', "
                  . sprintf("'click-%06d'", $n) . ", 'adyen', 'live1', "
                  . "1001, 50000, 'USD')", user => 'portal');
    }
}

my @ady = (
    # 1-2: an authorisation, and Adyen sending it again in the batch
    ady('AUTHORISATION', psp => 'ADY0000000000001', ref => dep(28)),
    ady('AUTHORISATION', psp => 'ADY0000000000001', ref => dep(28)),
    # 3: refused: the deposit fails
    ady('AUTHORISATION', psp => 'ADY0000000000002', ref => dep(29),
        success => 'false'),
    # 4: another amount: a case
    ady('AUTHORISATION', psp => 'ADY0000000000003', ref => dep(30),
        value => 49999),
    # 5: a refund of the first, in the same batch
    ady('REFUND', psp => 'ADY0000000000004', original => 'ADY0000000000001',
        value => 1000),
    # 6: its capture: nothing more
    ady('CAPTURE', psp => 'ADY0000000000005', original => 'ADY0000000000001',
        ref => dep(28)),
    # 7: a report: nothing
    ady('REPORT_AVAILABLE', psp => 'ADY0000000000006', value => 0),
);
@one = map { ingest_one($db{one}, $_) } @ady;
@got = ingest_batch($db{batch}, @ady);
is_deeply([ map { said($_) } @got ], [ map { said($_) } @one ],
          'Adyen: the batch said what ingest() said');
is_deeply([ map { $_->{outcome} } @got ],
          [ 'credit_created', 'duplicate', 'stored', 'case_opened',
            'credit_created', 'stored', 'stored' ],
          'Adyen: a payment, its retry, refused, another amount, a refund, '
          . 'a capture, a report');
same_rows('Adyen\'s items');

# --- risk holds (sql/079): judged in a batch as one by one ----------------

# bob's deposits on login 1002; a credit over 600.00 USD and a login's
# third deposit in a day are held: in a batch, each element sees the
# credits of the elements before it, as it would one by one
for my $sb (values %db) {
    $sb->psql("SELECT mt5credit.register_account('bob', 'live1', 1002, "
              . "'USD')", user => 'portal');
    for my $n (31 .. 34) {
        $sb->psql("SELECT mt5credit.create_deposit('bob', "
                  . sprintf("'click-%06d'", $n) . ", 'stripe', 'live1', "
                  . "1002, " . ($n == 32 ? 70000 : 50000) . ", 'USD')",
                  user => 'portal');
    }
    for my $r ([ 'credit_amount', "'USD'", "'600.00'" ],
               [ 'login_count_24h', 'NULL', "'2'" ])
    {
        my $c = $sb->sql1("SELECT mt5credit.risk_rule_propose('$r->[0]', "
                          . "$r->[1], NULL, $r->[2], false, 'test')",
                          user => 'ops_alice');
        $sb->sql1("SELECT mt5credit.risk_rule_decide($c, 'approve', 'ok')",
                  user => 'ops_bob');
    }
}
my @risk = map { delivery(paid($_, id => "evt_risk_$_", pi => "pi_risk_$_",
                               amount => $_ == 32 ? 70000 : 50000)) }
           31 .. 34;
@one = map { ingest_one($db{one}, $_) } @risk;
@got = ingest_batch($db{batch}, @risk);
is_deeply([ map { said($_) } @got ], [ map { said($_) } @one ],
          'risk holds: the batch said what ingest() said');
is(join(',', map { $_->[0] } @{ $db{batch}->psql(
       "SELECT c.status || ':' || coalesce((SELECT string_agg(r->>'rule', "
       . "'+' ORDER BY r->>'rule') FROM jsonb_array_elements(c.held_for) r), "
       . "'') FROM mt5credit.mt5_credit c WHERE c.mt5_login = 1002 "
       . "ORDER BY c.id") }),
   'pending:,held:credit_amount,held:login_count_24h,held:login_count_24h',
   'risk holds: in the batch, 700.00 held for its amount, the login\'s '
   . 'third and fourth of the day for their count');
same_rows('risk holds');

# the rules go, by two people, before the next batches
for my $sb (values %db) {
    for my $r ([ 'credit_amount', "'USD'" ], [ 'login_count_24h', 'NULL' ]) {
        my $c = $sb->sql1("SELECT mt5credit.risk_rule_propose('$r->[0]', "
                          . "$r->[1], NULL, NULL, true, 'test over')",
                          user => 'ops_alice');
        $sb->sql1("SELECT mt5credit.risk_rule_decide($c, 'approve', 'ok')",
                  user => 'ops_bob');
    }
}

# --- the map is no way to choose an actor -------------------------------

my $next = $db{one}->sql1("SELECT last_value + 1 FROM "
                          . "mt5credit.mt5_credit_id_seq");
my $forged = $db{one}->psql(
    "SELECT set_config('mt5credit.actors', chr(30) || 'c$next' || chr(31) "
    . "|| 'someone else' || chr(30), false); "
    . "SELECT outcome FROM mt5credit.ingest('stripe', NULL, "
    . hexlit(paid(16)) . ", 'stripe', $SIGNED_AT, NULL)", user => 'edge');
is($forged->[-1][0], 'credit_created', 'a delivery with a map set by its '
   . 'caller');
is($db{one}->sql1("SELECT string_agg(actor, ',') FROM "
                  . "mt5credit.credit_history h JOIN mt5credit.mt5_credit c "
                  . "ON c.id = h.credit_id WHERE c.provider_payment_id = "
                  . "'pi_batch_16'"),
   'ingest:stripe:evt_batch_16', 'has ingest()\'s own actor in its history');

# --- two batches deadlocking ---------------------------------------------

# each locks two deposits in the other's order (status reports: through
# ingest()); a third session holds both until both batches wait on it
sub processing {
    my ($n, $id) = @_;
    return delivery(qq({"id": "$id", "object": "event", "type": )
        . qq("payment_intent.processing", "data": {"object": {"id": )
        . qq("pi_dl_$n", "object": "payment_intent", "amount": 50000, )
        . qq("currency": "usd", "metadata": {"deposit_id": "@{[ dep($n) ]}"}, )
        . qq("status": "processing"}}}));
}
sub batch_sql {
    my (@d) = @_;
    my $each = sub { 'ARRAY[' . join(', ', map { $_[0] } @d) . ']' };
    return 'SELECT ord, coalesce(outcome, \'\'), coalesce(error_code, \'\') '
        . 'FROM mt5credit.ingest_batch(' . $each->("'stripe'") . ', '
        . $each->('NULL') . '::text[], ARRAY['
        . join(', ', map { hexlit($_->{body}) } @d) . '], '
        . $each->("'stripe'") . ', ' . $each->($SIGNED_AT) . ', '
        . $each->('NULL') . '::text[]) ORDER BY ord;';
}
{
    # In this order, whatever the scheduler does: b's transaction holds
    # 18 (a batch of it, not yet committed); a's batch locks 17 and waits
    # for 18; then b's second batch asks for 17.  (Both waiting on one
    # holder of both raced for the rows once it let go: a could take both
    # before b woke, and no deadlock came.)
    my $sb = $db{batch};
    my $wait = sub {
        my ($what, $cond) = @_;
        for (1 .. 200) { return 1 if $cond->(); select undef, undef, undef, 0.05 }
        diag("timed out waiting for $what");
        return 0;
    };
    my $b = $sb->psql_session;
    $b->send('BEGIN;');
    $b->send(batch_sql(processing(18, 'evt_dl_b1')));
    $wait->('b holding 18', sub { $sb->sql1("SELECT count(*) FROM "
        . "pg_stat_activity WHERE state = 'idle in transaction'") == 1 });
    my $a = $sb->psql_session;
    $a->send(batch_sql(processing(17, 'evt_dl_a1'), processing(18, 'evt_dl_a2')));
    ok($wait->('a waiting', sub { $sb->sql1("SELECT count(*) FROM "
        . "pg_stat_activity WHERE wait_event_type = 'Lock'") == 1 }),
       'a batch holding one deposit waits for the other, held by a batch '
       . 'of another transaction');
    $b->send(batch_sql(processing(17, 'evt_dl_b2')));
    $b->send('COMMIT;');
    $a->close;
    $b->close;
    my @rows = map { [ split /\|/ ] } grep { /^\d+\|/ }
               map { split /\n/, $_->output } $a, $b;
    is(scalar @rows, 4, 'both batches answered, one row per delivery');
    is(scalar(grep { ($_->[2] // '') eq '40P01' } @rows), 1,
       'the deadlock failed one delivery of one batch (40P01), and only it');
    is(scalar(grep { ($_->[1] // '') eq 'stored' } @rows), 3,
       '... the other three were recorded');
    is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event WHERE "
                 . "provider_event_id LIKE 'evt\\_dl\\_%'"), 3,
       '... and nothing of the failed one is stored: its provider retries');
}

# --- who may call it -------------------------------------------------------

like($db{batch}->psql("SELECT * FROM mt5credit.ingest_batch('{}', '{}', "
                      . "'{}', '{}', '{}', '{}')", user => 'portal',
                      may_fail => 1),
     qr/permission denied for function ingest_batch/,
     'the portal role may not call ingest_batch()');
is_deeply($db{batch}->psql("SELECT count(*) FROM mt5credit.ingest_batch("
                           . "'{}', '{}', '{}', '{}', '{}', '{}')",
                           user => 'edge'),
          [ [ 0 ] ], 'the edge may, and an empty batch returns no row');
like($db{batch}->psql("SELECT * FROM mt5credit.ingest_batch("
                      . "ARRAY['stripe'], '{}', ARRAY['\\x7b7d'::bytea], "
                      . "ARRAY['stripe'], ARRAY[1], ARRAY[NULL::text])",
                      user => 'edge', may_fail => 1),
     qr/1 bodies, but arrays of other lengths/,
     'arrays of other lengths: refused, naming it');

done_testing();
