#!/usr/bin/perl
#
# Checkout.com's own events through the live edge (issue 32, item 2), and
# the payload format as data (sql/075).  Measured on cc853cc (this file's
# first run, before 075): a signed payment_captured for a deposit was
# stored and ignored ("event type not mapped"), because every provider
# but 'stripe' was read as the generic payload.  This makes impossible:
#   - a provider's real capture never crediting: payment_captured credits
#     the deposit named by data.reference, once, with the deposit's login
#   - an authorisation crediting: payment_approved is seen and never money
#   - a capture for another amount crediting: a case, no credit
#   - a capture retried under another event id crediting twice
#   - a refund or a dispute lost: payment_refunded is a debit linked to
#     the credit; a dispute's first debiting event is a chargeback, its
#     later events the same one, dispute_won its reversal
#   - a provider without a row read otherwise than before 075: as the
#     generic payload
#   - a format changed under stored events: a row is fixed once written,
#     and one naming a provider that already has events must be generic

use strict;
use warnings;

use Test::More;
use Digest::SHA qw(hmac_sha256_hex);

use lib 't/lib';
use Mt5Credit::Sandbox;

my $SECRET = 'cko-test-secret-075';

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $secret_file = $sb->write_file('secrets/cko', "$SECRET\n");

my $conf = '';
for my $p (qw(checkout ckogeneric)) {
    $conf .= <<"LOC";
        location = /webhooks/$p {
            mt5_credit_webhook $p;
            mt5_credit_signature hmac-sha256 header=Cko-Signature encoding=hex;
            mt5_credit_secret_file $secret_file;
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

# the fields as Checkout.com's documented samples lay them out; the ids
# and amounts are ours
my $n = 0;
sub event {
    my ($type, %data) = @_;
    my $id = sprintf('evt_t95%08d', ++$n);
    my $data = join(',', map {
        my $v = $data{$_};
        qq("$_":) . ($v =~ /^[0-9]+$/ && $_ eq 'amount' ? $v : qq("$v"))
    } sort keys %data);
    return qq({"id":"$id","source":"gwc_notifier1","type":"$type",)
         . qq("timestamp":"2026-12-05T09:12:32.357+00:00","version":"1.0.29",)
         . qq("data":{$data,"metadata":{"partner_id":"123989"}}});
}

sub post {
    my ($provider, $body) = @_;
    my $res = $sb->http('POST', "/webhooks/$provider",
        headers => [ [ 'Content-Type', 'application/json' ],
                     [ 'Cko-Signature', hmac_sha256_hex($body, $SECRET) ] ],
        body => $body);
    return $res;
}

sub credits {
    my ($where) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE $where");
}

sub last_disposition {
    return $sb->sql1('SELECT disposition || coalesce(\': \' || detail, \'\') '
                     . 'FROM mt5credit.webhook_event ORDER BY id DESC LIMIT 1');
}

# --- a provider without a row: read as the generic payload, as before ---

my $g = $sb->create_deposit(client => 'alice', login => 1001,
                            amount => 5000, provider => 'ckogeneric');
my $res = post('ckogeneric', event('payment_captured', id => 'pay_g1',
    action_id => 'act_g1', reference => $g, amount => 5000,
    currency => 'USD'));
is($res->{status}, 200, 'no row: the signed event is stored');
is(last_disposition(), 'ignored: event type not mapped',
   'no row: read as the generic payload, so a capture is not mapped');
is(credits("provider = 'ckogeneric'"), 0, 'no row: no credit');

# --- the format is data ---

$sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
          . "('checkout', 'checkout')");
is($sb->sql1("SELECT payload FROM mt5credit.provider_payload "
             . "WHERE provider = 'checkout'"), 'checkout',
   'a platform team names the format');

my $err = $sb->psql("UPDATE mt5credit.provider_payload SET payload = "
                    . "'generic' WHERE provider = 'checkout'",
                    may_fail => 1, must_fail => 1);
like($err, qr/fixed once chosen/, 'a format cannot be changed');
$err = $sb->psql("DELETE FROM mt5credit.provider_payload "
                 . "WHERE provider = 'checkout'", may_fail => 1, must_fail => 1);
like($err, qr/fixed once chosen/, 'nor removed');
$err = $sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
                 . "('ckogeneric', 'checkout')", may_fail => 1, must_fail => 1);
like($err, qr/already read as the generic payload/,
     'a provider with events cannot be given another format');
$err = $sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
                 . "('acme', 'stripe')", may_fail => 1, must_fail => 1);
like($err, qr/provider_payload_check/, 'only stripe is read as Stripe');

# --- Checkout.com's events ---

my $dep = $sb->create_deposit(client => 'alice', login => 1001,
                              amount => 25000, provider => 'checkout');

$res = post('checkout', event('payment_approved', id => 'pay_a1',
    action_id => 'act_a1', reference => $dep, amount => 25000,
    currency => 'USD'));
is($res->{status}, 200, 'payment_approved is stored');
is(credits("provider = 'checkout'"), 0, 'an authorisation is no credit');

my $cap = event('payment_captured', id => 'pay_a1', action_id => 'act_a2',
                reference => $dep, amount => 25000, currency => 'USD');
$res = post('checkout', $cap);
is($res->{status}, 200, 'payment_captured is stored');
is(last_disposition(), 'credit_created', 'a capture credits');
is($sb->sql1("SELECT mt5_login || ' ' || amount_minor || ' ' || currency "
             . "|| ' ' || kind || ' ' || status FROM mt5credit.mt5_credit "
             . "WHERE provider = 'checkout' AND provider_payment_id = 'pay_a1'"),
   '1001 25000 USD deposit pending',
   "the credit is the deposit's: its login, amount and currency");

is(post('checkout', $cap)->{status}, 200, 'the same delivery again: 200');
post('checkout', event('payment_captured', id => 'pay_a1',
    action_id => 'act_a2', reference => $dep, amount => 25000,
    currency => 'USD'));
is(credits("provider = 'checkout' AND kind = 'deposit'"), 1,
   'a capture under another event id: still one credit');

# a capture for another amount, or naming another deposit's login's
# deposit with a payment already credited, is a person's
my $dep2 = $sb->create_deposit(client => 'bob', login => 1002,
                               amount => 10000, provider => 'checkout');
post('checkout', event('payment_captured', id => 'pay_b1',
    action_id => 'act_b1', reference => $dep2, amount => 9999,
    currency => 'USD'));
is(last_disposition() =~ /^case_opened/ ? 1 : 0, 1,
   'a capture of another amount opens a case');
is(credits("provider = 'checkout' AND provider_payment_id = 'pay_b1'"), 0,
   'and credits nothing');

# declined: a status, never money
my $dep3 = $sb->create_deposit(client => 'bob', login => 1002,
                               amount => 7000, provider => 'checkout');
is(post('checkout', event('payment_declined', id => 'pay_c1',
    action_id => 'act_c1', reference => $dep3, amount => 7000,
    currency => 'USD'))->{status}, 200, 'payment_declined is stored');
is(credits("provider = 'checkout' AND provider_payment_id = 'pay_c1'"), 0,
   'a declined payment is no credit');

# refund: a debit linked to the credit
post('checkout', event('payment_refunded', id => 'pay_a1',
    action_id => 'act_r1', reference => $dep, amount => 5000,
    currency => 'USD'));
is($sb->sql1("SELECT r.kind || ' ' || r.direction || ' ' || r.amount_minor "
             . "|| ' ' || r.mt5_login || ' ' || (r.original_credit_id = c.id) "
             . "FROM mt5credit.mt5_credit r JOIN mt5credit.mt5_credit c "
             . "ON c.provider = r.provider AND c.provider_payment_id = 'pay_a1' "
             . "WHERE r.provider_payment_id = 'refund:act_r1'"),
   'refund debit 5000 1001 true',
   'payment_refunded: a debit of its amount, linked to the credit');

# a dispute: its first debiting event is the chargeback, later ones the same
for my $type (qw(dispute_evidence_required dispute_lost)) {
    post('checkout', event($type, id => 'dsp_d1', payment_id => 'pay_a1',
        payment_action_id => 'act_a2', payment_reference => $dep,
        amount => 20000, currency => 'USD', category => 'fraudulent'));
}
is(credits("provider_payment_id = 'chargeback:dsp_d1'"), 1,
   'a dispute debited and then lost: one chargeback');
is($sb->sql1("SELECT kind || ' ' || direction || ' ' || amount_minor "
             . "FROM mt5credit.mt5_credit "
             . "WHERE provider_payment_id = 'chargeback:dsp_d1'"),
   'chargeback debit 20000', 'of the disputed amount');

post('checkout', event('dispute_won', id => 'dsp_d1', payment_id => 'pay_a1',
    payment_action_id => 'act_a2', amount => 20000, currency => 'USD'));
is(credits("provider_payment_id = 'chargeback:dsp_d1:reversed'"), 1,
   'dispute_won: the reversal');

# an event type with no meaning is stored and ignored
post('checkout', event('card_verified', id => 'src_x', reference => $dep,
    currency => 'USD'));
is(last_disposition(), 'ignored: event type not mapped',
   'an unmapped type is stored and ignored');

is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
             . "WHERE provider = 'checkout' AND kind = 'deposit'"), 1,
   'in all, one deposit credit for Checkout.com');
is(scalar(my @p = $sb->log_problems), 0, 'no error or alert in the edge log');

done_testing;
