#!/usr/bin/perl
#
# Coinbase Commerce's own events through the live edge (issue 32, item 2),
# and every provider's meaning as rows of JSON paths (sql/076).  Measured
# on d7e184f (this file's first run, before 076): Coinbase Commerce's
# published charge:created, correctly signed, was answered 400
# malformed_body, "no event id": its delivery's own "id" is a number and
# the event is nested under "event".  This makes impossible:
#   - a confirmed charge, paid once and in full, never crediting: it
#     credits the deposit named in its metadata, with the deposit's login
#   - a decimal price read through floating point, or rounded: "250.00"
#     USD is 25000 cents, "25000" JPY is 25000 yen, and "250.001" USD is
#     no amount (a case, no credit)
#   - a charge seen on the chain and not confirmed crediting (pending)
#   - a charge paid short, over, late or more than once crediting: its
#     timeline, its payments or what they sum to say so, and each is a
#     provider_payment_review case for a person, never money
#   - a retry of one event (another attempt number, the same event)
#     opening a body-conflict case, or crediting twice
#   - a rule changed or removed under stored events; a format, likewise
#   - a provider without a row read otherwise than as before: the
#     generic payload, where this body has no event id
#   - the edge and Coinbase's own library (coinbase-commerce-node, a
#     test-only npm package, make test-sdks) disagreeing: every delivery
#     the edge took, the library verifies, and it was stored under the id
#     and type of the event the library returns; the one signed with
#     another secret both refuse

use strict;
use warnings;

use Test::More;
use Digest::SHA qw(hmac_sha256_hex);
use JSON::PP;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(coinbase_event);

my $SECRET = 'cc-test-secret-076';
my $json = JSON::PP->new->canonical;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;

# Coinbase Commerce's published vector (t/vectors/coinbase-commerce.json,
# from coinbase-commerce-python's tests): its body and secret, as sent
my ($published) = grep { $_->{name} eq 'valid/published' } @{
    JSON::PP->new->decode(do {
        local $/;
        open my $fh, '<', 't/vectors/coinbase-commerce.json' or die $!;
        <$fh>
    }) };

my $conf = '';
for my $p (qw(coinbase ccgeneric ccpublished)) {
    my $secret = $p eq 'ccpublished' ? $published->{secret} : $SECRET;
    my $file = $sb->write_file("secrets/$p", "$secret\n");
    $conf .= <<"LOC";
        location = /webhooks/$p {
            mt5_credit_webhook $p;
            mt5_credit_signature hmac-sha256 header=X-CC-Webhook-Signature encoding=hex;
            mt5_credit_secret_file $file;
        }
LOC
}

$sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "%%PG%%";
    server {
        listen 127.0.0.1:%%PORT%%;
        client_max_body_size 1m;
$conf
    }
HTTP

$sb->register_account('alice', 1001);
$sb->register_account('bob', 1002);
$sb->register_account('carol', 1003, 'JPY');

# every delivery sent, with its answer: read again at the end by
# Coinbase's own library
my @sent;

sub post {
    my ($provider, $body, $secret) = @_;
    $body = $json->encode($body) if ref $body;
    my $sig = hmac_sha256_hex($body, $secret // $SECRET);
    my $res = $sb->http('POST', "/webhooks/$provider",
        headers => [ [ 'Content-Type', 'application/json' ],
                     [ 'X-CC-Webhook-Signature', $sig ] ],
        body => $body);
    push @sent, { provider => $provider, body => $body, signature => $sig,
                  secret => $provider eq 'ccpublished' ? $published->{secret}
                                                        : $SECRET,
                  res => $res };
    return $res;
}

sub credits {
    my ($where) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE $where");
}

sub last_event {
    return $sb->sql1("SELECT provider_event_id || ' ' || coalesce(event_type, "
                     . "'-') || ' ' || disposition || coalesce(': ' || detail, "
                     . "'') FROM mt5credit.webhook_event ORDER BY id DESC "
                     . "LIMIT 1");
}

sub review_cases {
    return $sb->sql1("SELECT count(*) FROM mt5credit.\"case\" "
                     . "WHERE kind = 'provider_payment_review'");
}

# --- a provider without a row: the generic payload, as before ---

my $res = post('ccgeneric', $published->{body});
is($res->{status}, 400, 'no row: the body has no event id where the generic '
   . 'payload keeps it: 400');
like($res->{body}, qr/malformed_body/, '(malformed_body)');

# --- the published delivery, read as Coinbase Commerce's ---

$sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
          . "('ccpublished', 'coinbase'), ('coinbase', 'coinbase')");
$res = post('ccpublished', $published->{body}, $published->{secret});
is($res->{status}, 200, "the published delivery, under its published "
   . "signature: 200");
is(last_event(), '24934862-d980-46cb-9402-43c81b0cdba6 charge:created '
   . 'ignored: a charge opened: no payment yet',
   "keyed by its event's id, not the delivery's; a charge opened is no "
   . 'money');

# --- a charge paid once and in full ---

my $dep = $sb->create_deposit(client => 'alice', login => 1001,
                              amount => 25000, provider => 'coinbase');
post('coinbase', coinbase_event('charge:pending', charge => 'c-paid-1',
    deposit => $dep, price => '250.00', payments => [ [1, '250.00',
    'PENDING'] ], timeline => [ ['NEW'], ['PENDING'] ]));
like(last_event(), qr/charge:pending status_recorded/,
     'charge:pending: a status');
is(credits("provider = 'coinbase'"), 0, 'seen on the chain: no credit');

my $confirmed = $json->decode(coinbase_event('charge:confirmed',
    charge => 'c-paid-1', deposit => $dep, price => '250.00',
    payments => [ [1, '250.00'] ],
    timeline => [ ['NEW'], ['PENDING'], ['COMPLETED'] ]));
$res = post('coinbase', $confirmed);
is($res->{status}, 200, 'charge:confirmed: 200');
like(last_event(), qr/charge:confirmed credit_created$/, 'it credits');
is($sb->sql1("SELECT mt5_login || ' ' || amount_minor || ' ' || currency "
             . "|| ' ' || paid_amount_minor || ' ' || kind FROM "
             . "mt5credit.mt5_credit WHERE provider = 'coinbase' "
             . "AND provider_payment_id = 'c-paid-1'"),
   '1001 25000 USD 25000 deposit',
   '"250.00" USD is 25000 cents, on the deposit\'s login');

# the same event again, in its next attempt's envelope
my %retry = %$confirmed;
$retry{id} = 9001;
$retry{attempt_number} = 2;
is(post('coinbase', \%retry)->{status}, 200, 'its retry (attempt 2): 200');
is($sb->sql1("SELECT count(*) FROM mt5credit.\"case\" "
             . "WHERE kind = 'event_body_conflict'"), 0,
   'another envelope around the same event is no body conflict');
is(credits("provider = 'coinbase' AND kind = 'deposit'"), 1,
   'and no second credit');

# the same event id with another event: other bytes, a person's
my %forged = %$confirmed;
$forged{event} = { %{ $confirmed->{event} },
                   data => { %{ $confirmed->{event}{data} },
                             name => 'Other' } };
post('coinbase', \%forged);
is($sb->sql1("SELECT count(*) FROM mt5credit.\"case\" "
             . "WHERE kind = 'event_body_conflict'"), 1,
   'the same event id with another event inside: a body conflict case');

# --- in other currencies: exactly, by the currency's digits ---

my $jpy = $sb->create_deposit(client => 'carol', login => 1003,
                              amount => 25000, currency => 'JPY',
                              provider => 'coinbase');
post('coinbase', coinbase_event('charge:confirmed', charge => 'c-jpy',
    deposit => $jpy, price => '25000', currency => 'JPY',
    payments => [ [2, '25000'] ], timeline => [ ['NEW'], ['COMPLETED'] ]));
is($sb->sql1("SELECT amount_minor || ' ' || currency FROM "
             . "mt5credit.mt5_credit WHERE provider_payment_id = 'c-jpy'"),
   '25000 JPY', '"25000" JPY is 25000 yen');

my $odd = $sb->create_deposit(client => 'bob', login => 1002,
                              amount => 10000, provider => 'coinbase');
post('coinbase', coinbase_event('charge:confirmed', charge => 'c-odd',
    deposit => $odd, price => '100.001', payments => [ [3, '100.001'] ],
    timeline => [ ['NEW'], ['COMPLETED'] ]));
like(last_event(), qr/case_opened: paid event without payment id, integer/,
     '"100.001" USD: more places than cents have, no amount: a case');
is(credits("provider_payment_id = 'c-odd'"), 0, 'and no credit');

# --- paid short, over, late, twice: a person's, never money ---

my @review = (
    [ 'confirmed, but the timeline says overpaid', 'charge:confirmed',
      payments => [ [4, '260.00'] ],
      timeline => [ ['NEW'], ['COMPLETED'], ['UNRESOLVED', 'OVERPAID'] ] ],
    [ 'confirmed, paid in two payments', 'charge:confirmed',
      payments => [ [5, '200.00'], [6, '50.00'] ],
      timeline => [ ['NEW'], ['COMPLETED'] ] ],
    [ 'confirmed, its one payment short of the price', 'charge:confirmed',
      payments => [ [7, '249.99'] ],
      timeline => [ ['NEW'], ['COMPLETED'] ] ],
    [ 'confirmed, its payment in another currency', 'charge:confirmed',
      payments => [ [8, '250.00', 'CONFIRMED', 'EUR'] ],
      timeline => [ ['NEW'], ['COMPLETED'] ] ],
    [ 'confirmed, with a payment still pending', 'charge:confirmed',
      payments => [ [9, '250.00', 'PENDING'] ],
      timeline => [ ['NEW'], ['COMPLETED'] ] ],
    [ 'confirmed, with no payment', 'charge:confirmed',
      payments => [], timeline => [ ['NEW'], ['COMPLETED'] ] ],
    [ 'failed after a short payment', 'charge:failed',
      payments => [ [10, '100.00'] ],
      timeline => [ ['NEW'], ['UNRESOLVED', 'UNDERPAID'] ] ],
    [ 'paid after it expired', 'charge:delayed',
      payments => [ [11, '250.00'] ],
      timeline => [ ['NEW'], ['EXPIRED'], ['UNRESOLVED', 'DELAYED'] ] ],
    [ 'resolved by hand in Coinbase', 'charge:resolved',
      payments => [ [12, '250.00'] ],
      timeline => [ ['NEW'], ['UNRESOLVED', 'DELAYED'], ['RESOLVED'] ] ],
);
my $k = 0;
for my $r (@review) {
    my ($what, $type, %c) = @$r;
    my $d = $sb->create_deposit(client => 'alice', login => 1001,
                                amount => 25000, provider => 'coinbase');
    my $before = review_cases();
    $res = post('coinbase', coinbase_event($type, charge => 'c-rev-' . ++$k,
                                          deposit => $d, price => '250.00',
                                          %c));
    is($res->{status}, 200, "$what: stored");
    is(review_cases() - $before, 1, "$what: a review case")
        or diag last_event();
    is(credits("provider_payment_id = 'c-rev-$k'"), 0, "$what: no credit");
}
is($sb->sql1("SELECT count(*) FROM mt5credit.\"case\" c JOIN "
             . "mt5credit.deposit d ON d.id = c.deposit_id WHERE c.kind = "
             . "'provider_payment_review' AND c.amount_minor = 25000 AND "
             . "c.currency = 'USD' AND c.severity = 'high'"), scalar(@review),
   'each review case names its deposit and the price, high');

# a payment that does not say it is confirmed, or in which currency: no
# pass (the conditions ask for what must be there, not for what is wrong)
for my $field (qw(status currency)) {
    my $d = $sb->create_deposit(client => 'alice', login => 1001,
                                amount => 25000, provider => 'coinbase');
    my $e = $json->decode(coinbase_event('charge:confirmed',
        charge => "c-no-$field", deposit => $d, price => '250.00',
        payments => [ [15, '250.00'] ],
        timeline => [ ['NEW'], ['COMPLETED'] ]));
    my $p = $e->{event}{data}{payments}[0];
    if ($field eq 'status') { delete $p->{status} }
    else                    { delete $p->{value}{local}{currency} }
    my $before = review_cases();
    post('coinbase', $e);
    is(review_cases() - $before, 1, "confirmed, its payment without a "
       . "$field: a review case");
    is(credits("provider_payment_id = 'c-no-$field'"), 0, '... no credit');
}

# a payment list that is not a list, with a field the price names twice in
# other objects: no credit read across them
{
    my $d = $sb->create_deposit(client => 'alice', login => 1001,
                                amount => 25000, provider => 'coinbase');
    my $e = $json->decode(coinbase_event('charge:confirmed',
        charge => 'c-obj', deposit => $d, price => '250.00',
        payments => [ [16, '250.00'] ],
        timeline => [ ['NEW'], ['COMPLETED'] ]));
    $e->{event}{data}{payments} = $e->{event}{data}{payments}[0];
    post('coinbase', $e);
    is(credits("provider_payment_id = 'c-obj'"), 0,
       'payments as an object, not a list: no credit');
    # the price as a list of objects each holding part of it
    my $d2 = $sb->create_deposit(client => 'alice', login => 1001,
                                 amount => 25000, provider => 'coinbase');
    $e = $json->decode(coinbase_event('charge:confirmed',
        charge => 'c-split', deposit => $d2, price => '250.00',
        payments => [ [17, '250.00'] ],
        timeline => [ ['NEW'], ['COMPLETED'] ]));
    $e->{event}{data}{pricing}{local} = [ { amount => '250.00' },
                                          { currency => 'USD' } ];
    post('coinbase', $e);
    is(credits("provider_payment_id = 'c-split'"), 0,
       'a price split across the elements of a list: never read as one '
       . '(field paths are strict)');
}

# failed with nothing paid: the deposit is closed, nothing for a person
my $none = $sb->create_deposit(client => 'alice', login => 1001,
                               amount => 5000, provider => 'coinbase');
post('coinbase', coinbase_event('charge:failed', charge => 'c-none',
    deposit => $none, price => '50.00',
    timeline => [ ['NEW'], ['EXPIRED'] ]));
like(last_event(), qr/charge:failed status_recorded: deposit \S+: failed/,
     'charge:failed with nothing paid: the deposit failed');

# --- the rules are data, fixed once written ---

my $err = $sb->psql("UPDATE mt5credit.payload_rule SET action = 'paid' "
                    . "WHERE payload = 'coinbase' AND event_type = "
                    . "'charge:delayed'", may_fail => 1, must_fail => 1);
like($err, qr/fixed once written/, 'a rule cannot be changed');
$err = $sb->psql("DELETE FROM mt5credit.payload_rule WHERE payload = "
                 . "'coinbase'", may_fail => 1, must_fail => 1);
like($err, qr/fixed once written/, 'nor removed');
$err = $sb->psql("UPDATE mt5credit.payload_format SET event_id = '\$.id' "
                 . "WHERE payload = 'coinbase'", may_fail => 1,
                 must_fail => 1);
like($err, qr/fixed once written/, 'a format cannot be changed');
$err = $sb->psql("INSERT INTO mt5credit.payload_rule (payload, event_type, "
                 . "step, action, payment, deposit) VALUES ('coinbase', "
                 . "'charge:x', 1, 'paid', '\$.event.data.id', "
                 . "'\$.event.data.metadata.deposit_reference')",
                 may_fail => 1, must_fail => 1);
like($err, qr/payload_rule_check/, 'a paid rule without an amount and '
     . 'currency cannot be written');
$err = $sb->psql("INSERT INTO mt5credit.payload_rule (payload, event_type, "
                 . "step, action, payment, deposit, amount, amount_form, "
                 . "currency) VALUES ('coinbase', 'charge:x', 1, 'paid', "
                 . "'strict \$.event.data.id', '\$.event.data.metadata.ref', "
                 . "'strict \$.a', 'minor', 'strict \$.c')", may_fail => 1,
                 must_fail => 1);
like($err, qr/payload_rule_check/, 'a rule reading a field in lax mode '
     . 'cannot be written');

# a body redacted by retention cannot tell a retry from another event
# under its id: a conflict for a person, never an error the provider
# retries forever
$sb->psql("UPDATE mt5credit.webhook_event SET raw_body = '', "
          . "body_redacted_at = now() WHERE provider = 'coinbase' AND "
          . "provider_event_id = '$confirmed->{event}{id}'");
my %late = %$confirmed;
$late{id} = 9002;
$late{attempt_number} = 3;
is(post('coinbase', \%late)->{status}, 200,
   'a retry of a redacted event: 200');
is($sb->sql1("SELECT count(*) FROM mt5credit.\"case\" "
             . "WHERE kind = 'event_body_conflict'"), 2,
   '... a body conflict case (the redacted bytes cannot say)');

# one signed with another secret: refused here
is(post('coinbase', coinbase_event('charge:confirmed', charge => 'c-forged',
    deposit => $dep, price => '250.00', payments => [ [13, '250.00'] ],
    timeline => [ ['NEW'], ['COMPLETED'] ]), 'not-the-secret')->{status},
   400, 'signed with another secret: 400');

# --- what Coinbase's own library makes of the same deliveries ---

my $sdk = "$Mt5Credit::Sandbox::ROOT/build/test-sdks/node_modules";
ok(-f "$sdk/coinbase-commerce-node/lib/Webhook.js",
   'coinbase-commerce-node is installed (make test-sdks)')
    or BAIL_OUT('run make test-sdks');
my @ours = grep { $_->{provider} ne 'ccgeneric' } @sent;
my $in = $sb->write_file('sdk-in.jsonl', join('', map {
    $json->encode({ body => $_->{body}, signature => $_->{signature},
                    secret => $_->{secret} }) . "\n" } @ours));
my @lib = map { $json->decode($_) }
          split /\n/, `NODE_PATH='$sdk' node t/sdk/coinbase_verify.js < '$in'`;
is(scalar(@lib), scalar(@ours), 'the library read each delivery ('
   . scalar(@ours) . ')');
my (@agree, @differ);
for my $i (0 .. $#ours) {
    my ($d, $l) = ($ours[$i], $lib[$i]);
    my $stored = $d->{res}{body} =~ /"event":(\d+)/
        ? $sb->psql("SELECT provider_event_id, coalesce(event_type, '') "
                    . "FROM mt5credit.webhook_event WHERE id = $1")->[0]
        : undef;
    my $ok = $d->{res}{status} == 200
        ? $l->{ok} && $stored && $stored->[0] eq $l->{id}
          && $stored->[1] eq $l->{type}
        : !$l->{ok} && $d->{res}{body} =~ /bad_signature/;
    push @{ $ok ? \@agree : \@differ }, $i;
}
is(scalar(@differ), 0, 'each delivery the edge took is one the library '
   . 'verifies, stored under the id and type of the event the library '
   . 'returns; the one the edge refused, the library refuses')
    or diag explain [ map { [ $ours[$_]{res}, $lib[$_] ] } @differ ];
is(scalar(@agree), 23, '(all 23 deliveries compared, 22 taken and one '
   . 'refused)');

is(credits("provider = 'coinbase' AND kind = 'deposit'"), 2,
   'in all, two deposit credits for Coinbase Commerce');
is(scalar(my @p = $sb->log_problems), 0, 'no error or alert in the edge log');

done_testing;
