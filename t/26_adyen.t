#!/usr/bin/perl
#
# Adyen's standard notifications through the live edge (issue 32, item 1):
# a batch of items, each signed on its own over eight of its fields
# (mt5_credit_signature adyen), each stored as its own event, read by the
# rules of sql/077.  Measured on da08528 (before this): the edge had no
# scheme for them, so a broker had to put an unsigned translation in
# front of it.  This makes impossible:
#   - a batch answered "[accepted]" before every item is stored, or an
#     item stored twice when Adyen sends the batch again
#   - an item whose signature fails being stored, or losing the items of
#     its batch that verify (they are stored; the answer is not
#     "[accepted]", so Adyen retries and finds them duplicates)
#   - an unsigned field (additionalData: a card holder's name) deciding
#     anything, or a signed one changed passing
#   - a body that cannot be read (not JSON, a key written twice, an
#     amount with a fraction) storing anything
#   - an authorisation crediting under manual capture, a capture crediting
#     twice under automatic capture, a refused notification moving money
#   - a refund, chargeback or its reversal lost: each a debit or credit
#     linked to the payment
#   - the edge and Adyen's own library (@adyen/api-library, a test-only
#     npm package, make test-sdks) disagreeing on any item: 1,000 random
#     batches through the reader (':', '\', non-ASCII, an empty or
#     absent originalReference), 20 through the live edge, and the
#     library's own sample notification crediting our deposit, or
#     opening a case for a reference that is none of ours

use strict;
use warnings;

use Test::More;
use Encode ();
use JSON::PP qw(decode_json encode_json);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(adyen_item adyen_batch);

my $KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
my $json = JSON::PP->new->canonical;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $key_file = $sb->write_file('secrets/adyen', "$KEY\n");

my $conf = '';
for my $p (qw(adyen adyenm)) {
    $conf .= <<"LOC";
        location = /webhooks/$p {
            mt5_credit_webhook $p;
            mt5_credit_signature adyen;
            mt5_credit_secret_file $key_file;
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
$sb->psql("INSERT INTO mt5credit.provider_payload VALUES ('adyen', 'adyen'), "
          . "('adyenm', 'adyen_manual')");

# an item signed with the edge's key unless said otherwise
sub item { return adyen_item(key => $KEY, @_) }
sub batch { return adyen_batch(@_) }

sub post {
    my ($provider, $body) = @_;
    return $sb->http('POST', "/webhooks/$provider", body => $body,
                     headers => [ [ 'Content-Type', 'application/json' ] ]);
}

sub accepted {
    my ($res) = @_;
    return $res->{status} == 200 && $res->{body} eq '[accepted]';
}

sub count {
    my ($sql) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.$sql");
}

sub disposition {
    my ($id) = @_;
    return $sb->sql1("SELECT disposition || coalesce(': ' || detail, '') "
                     . "FROM mt5credit.webhook_event WHERE provider_event_id "
                     . "= '$id'") // 'not stored';
}

# --- automatic capture: the authorisation credits ---

my $d1 = $sb->create_deposit(client => 'alice', login => 1001, amount => 25000,
                             currency => 'USD', provider => 'adyen');
my $auth = item(code => 'AUTHORISATION', ref => $d1, value => 25000);
my $res = post('adyen', batch($auth));
ok(accepted($res), 'a signed authorisation: "[accepted]"')
    or diag explain $res;
is($res->{headers}{'content-type'}, 'text/plain', '... as text, as Adyen reads it');
my $aid = "$auth->{pspReference}:AUTHORISATION:true";
is(disposition($aid), 'credit_created',
   'stored under pspReference:eventCode:success, and credited');
is($sb->sql1("SELECT mt5_login || ' ' || amount_minor || ' ' || currency || "
             . "' ' || kind FROM mt5credit.mt5_credit WHERE provider = "
             . "'adyen' AND provider_payment_id = '$auth->{pspReference}'"),
   '1001 25000 USD deposit', "the credit is the deposit's: login, amount");
is($sb->sql1("SELECT raw_body = convert_to('" . $json->encode($auth)
             . "', 'UTF8') FROM mt5credit.webhook_event "
             . "WHERE provider_event_id = '$aid'"),
   't', "the stored body is the item's bytes, as they arrived");

ok(accepted(post('adyen', batch($auth))), 'the same batch again: "[accepted]"');
is(count("mt5_credit WHERE provider = 'adyen'"), 1, '... and still one credit');
ok(accepted(post('adyen', batch(item(code => 'CAPTURE', ref => $d1,
    value => 25000, original => $auth->{pspReference})))),
   'its CAPTURE (sent when asked for)');
is(count("mt5_credit WHERE provider = 'adyen'"), 1,
   '... credits nothing more: the authorisation did');

# an unsigned field is not read; a signed one cannot change
my $name = item(code => 'AUTHORISATION', ref => $d1, value => 25000,
                psp => $auth->{pspReference});
$name->{additionalData}{cardHolderName} = 'Mallory';
ok(accepted(post('adyen', batch($name))),
   'another card holder name (unsigned) under the same id: "[accepted]"');
like(disposition($aid), qr/^credit_created/,
     '... the item stored first stays as it was');
is(count(q{"case" WHERE kind = 'event_body_conflict'}), 1,
   '... the other bytes are a body conflict for a person');
is(count("mt5_credit WHERE provider = 'adyen'"), 1, '... and move no money');
my $forged = item(code => 'AUTHORISATION', ref => $d1, value => 25000);
$forged->{amount}{value} = 2500000;
my $before = count('webhook_event');
$res = post('adyen', batch($forged));
is($res->{status}, 400, 'the amount changed after signing: 400');
like($res->{body}, qr/bad_signature/, '... bad_signature');
is(count('webhook_event'), $before, '... nothing stored');
$res = post('adyen', batch(item(code => 'AUTHORISATION', ref => $d1,
                                value => 25000, key => 'AB' x 32)));
is($res->{status}, 400, 'signed with another key: 400');

# one bad item never loses the others, and never gets "[accepted]"
my $d2 = $sb->create_deposit(client => 'bob', login => 1002, amount => 7000,
                             currency => 'USD', provider => 'adyen');
my $a2 = item(code => 'AUTHORISATION', ref => $d2, value => 7000);
my $r1 = item(code => 'REFUND', value => 5000, original => $auth->{pspReference});
my $bad = item(code => 'AUTHORISATION', ref => $d2, value => 7000);
$bad->{merchantReference} = $d1;
$res = post('adyen', batch($a2, $bad, $r1));
is($res->{status}, 400, 'a batch with one forged item: not "[accepted]"');
is(disposition("$a2->{pspReference}:AUTHORISATION:true"), 'credit_created',
   '... its first good item stored and credited');
is(disposition("$r1->{pspReference}:REFUND:true"), 'credit_created',
   '... and its last');
is(disposition("$bad->{pspReference}:AUTHORISATION:true"), 'not stored',
   '... the forged one not');
ok(accepted(post('adyen', batch($a2, $r1))),
   'the batch again without it: "[accepted]"');
is(count("mt5_credit WHERE provider = 'adyen' AND kind = 'deposit'"), 2,
   '... its items duplicates: two deposits credited, once each');
is($sb->sql1("SELECT r.kind || ' ' || r.direction || ' ' || r.amount_minor "
             . "|| ' ' || r.mt5_login || ' ' || (r.original_credit_id = c.id) "
             . "FROM mt5credit.mt5_credit r JOIN mt5credit.mt5_credit c ON "
             . "c.provider = r.provider AND c.provider_payment_id = "
             . "'$auth->{pspReference}' WHERE r.provider_payment_id = "
             . "'refund:$r1->{pspReference}'"),
   'refund debit 5000 1001 true', 'REFUND: a debit linked to the payment');

# refused notifications move nothing; a failed authorisation closes
my $d3 = $sb->create_deposit(client => 'bob', login => 1002, amount => 3000,
                             currency => 'USD', provider => 'adyen');
my $no = item(code => 'AUTHORISATION', ref => $d3, value => 3000,
              success => 'false');
ok(accepted(post('adyen', batch($no, item(code => 'REFUND', value => 100,
    success => 'false', original => $auth->{pspReference})))),
   'a refused authorisation and a refused refund: stored');
is(count("mt5_credit WHERE provider = 'adyen' AND provider_payment_id IN "
         . "('$no->{pspReference}')"), 0, '... a refused one credits nothing');
is(count("mt5_credit WHERE provider = 'adyen' AND kind = 'refund'"), 1,
   '... nor debits');
is($sb->sql1("SELECT status FROM mt5credit.deposit WHERE reference = '$d3'"),
   'failed', '... the deposit of the refused authorisation is failed');

# a dispute: one debit, its reversal one credit back
my $cb = item(code => 'CHARGEBACK', value => 7000, psp => 'DSP0000000000001',
              original => $a2->{pspReference});
ok(accepted(post('adyen', batch(item(code => 'NOTIFICATION_OF_CHARGEBACK',
    value => 7000, psp => 'DSP0000000000001',
    original => $a2->{pspReference}), $cb))), 'a dispute opened, then lost');
is($sb->sql1("SELECT kind || ' ' || direction || ' ' || amount_minor || ' ' "
             . "|| mt5_login FROM mt5credit.mt5_credit WHERE "
             . "provider_payment_id = 'chargeback:DSP0000000000001'"),
   'chargeback debit 7000 1002', 'CHARGEBACK: a debit of the disputed payment');
ok(accepted(post('adyen', batch(item(code => 'CHARGEBACK_REVERSED',
    value => 7000, psp => 'DSP0000000000001',
    original => $a2->{pspReference})))), 'won back');
is(count("mt5_credit WHERE provider_payment_id = "
         . "'chargeback:DSP0000000000001:reversed' AND direction = 'credit'"),
   1, 'CHARGEBACK_REVERSED: a credit back');

# --- manual capture: the capture credits ---

my $m1 = $sb->create_deposit(client => 'alice', login => 1001, amount => 9000,
                             currency => 'USD', provider => 'adyenm');
my $ma = item(code => 'AUTHORISATION', ref => $m1, value => 9000);
ok(accepted(post('adyenm', batch($ma))), 'manual capture: the authorisation');
is(count("mt5_credit WHERE provider = 'adyenm'"), 0,
   '... is held money, no credit');
my $mc = item(code => 'CAPTURE', ref => $m1, value => 9000,
              original => $ma->{pspReference});
ok(accepted(post('adyenm', batch($mc))), 'its capture');
is($sb->sql1("SELECT mt5_login || ' ' || amount_minor || ' ' || "
             . "provider_payment_id FROM mt5credit.mt5_credit "
             . "WHERE provider = 'adyenm'"),
   "1001 9000 $ma->{pspReference}",
   "... credits, keyed on the authorisation's pspReference");

# --- a body that cannot be read stores nothing ---

$before = count('webhook_event');
for my $bad ([ 'not JSON', 'notificationItems' ],
             [ 'no items', '{"live":"false","notificationItems":[]}' ],
             [ 'a key written twice', batch($auth) =~
               s/"success":"true"/"success":"true","success":"false"/r ],
             [ 'an amount with a fraction', batch($auth) =~
               s/"value":25000/"value":25000.0/r ],
             [ 'no signature', batch($auth) =~ s/"hmacSignature"/"hmac"/r ]) {
    $res = post('adyen', $bad->[1]);
    is($res->{status}, 400, "$bad->[0]: 400");
    like($res->{body}, qr/malformed_body/, '... malformed_body');
}
is(count('webhook_event'), $before, 'none of them stored anything');
like($sb->error_log, qr/reason=malformed_body \(a signed field twice, at byte \d+/,
     'the log says why and where');

# --- Adyen's own library: the same verdict, item by item ---

my $sdk = "$Mt5Credit::Sandbox::ROOT/build/test-sdks/node_modules";
ok(-f "$sdk/\@adyen/api-library/lib/src/utils/hmacValidator.js",
   '@adyen/api-library is installed (make test-sdks)')
    or BAIL_OUT('run make test-sdks');
my $cases = $sb->dir . '/adyen-cases.json';
system("NODE_PATH='$sdk' node t/sdk/adyen_cases.js 1000 2612 > '$cases'") == 0
    or BAIL_OUT('t/sdk/adyen_cases.js failed');
my $out = `build/t/adyen_test '$cases'`;
is($? >> 8, 0, "1,000 random batches: the reader and verifier agree with the "
   . 'library on every item, its event id and its signed string')
    or diag join("\n", grep { /^not ok|^#/ } split /\n/, $out);
like($out, qr/^1\.\.(\d+)$/m, '... ' . (($out =~ /^1\.\.(\d+)$/m)[0] // 0)
     . ' checks');

# the library's own sample notification (tools/hmac/payload.json, an
# AUTHORISATION), signed by the library with the edge's key: for one of
# our deposits it credits; as shipped, naming a reference that is no
# deposit of ours, it credits nothing and a person sees it
my $sample = "$sdk/\@adyen/api-library/tools/hmac/payload.json";
my $shipped = decode_json(do { local (@ARGV, $/) = $sample; <> });
my $sign = sub {
    my ($batch) = @_;
    my $f = $sb->write_file('adyen-unsigned.json', encode_json($batch));
    return scalar `NODE_PATH='$sdk' node t/sdk/adyen_sign.js $KEY < '$f'`;
};
my $s1 = $sb->create_deposit(client => 'bob', login => 1002, amount => 32500,
                             currency => 'USD', provider => 'adyen');
my $ours = decode_json(encode_json($shipped));
my $it = $ours->{notificationItems}[0]{NotificationRequestItem};
@$it{qw(merchantReference pspReference)} = ($s1, 'SAMPLE0000000001');
$it->{amount}{currency} = 'USD';
ok(accepted(post('adyen', $sign->($ours))),
   "the library's sample notification, for one of our deposits: "
   . '"[accepted]"');
is($sb->sql1("SELECT mt5_login || ' ' || amount_minor || ' ' || kind FROM "
             . "mt5credit.mt5_credit WHERE provider_payment_id = "
             . "'SAMPLE0000000001'"), '1002 32500 deposit',
   '... credits the deposit: its login, the amount');
$before = count("mt5_credit WHERE provider = 'adyen'");
ok(accepted(post('adyen', $sign->($shipped))),
   '... and as shipped (reference "1143-R2", EUR 325.00): "[accepted]"');
is(count("mt5_credit WHERE provider = 'adyen'"), $before,
   '... credits nothing: no deposit of ours');
like(disposition($shipped->{notificationItems}[0]{NotificationRequestItem}
                 {pspReference} . ':AUTHORISATION:true'), qr/^case_opened/,
     '... and opens a case');

# twenty more, signed with the edge's key, through the live edge:
# "[accepted]" exactly when the library finds every item valid
my $edge = $sb->dir . '/adyen-edge.json';
system("NODE_PATH='$sdk' node t/sdk/adyen_cases.js 20 6121 $KEY > '$edge'")
    == 0 or BAIL_OUT('t/sdk/adyen_cases.js failed');
my $doc = decode_json(do { local (@ARGV, $/) = $edge; <> });
my ($agree, $whole) = (0, 0);
for my $c (@{ $doc->{cases} }) {
    my $all = !grep { $_ ne 'valid' } @{ $c->{expect} };
    $whole++ if $all;
    my $r = post('adyen', Encode::encode('UTF-8', $c->{body}));
    $agree++ if $all ? accepted($r) : $r->{status} == 400;
    diag "$c->{name}: @{ $c->{expect} }: $r->{status} $r->{body}"
        unless $all ? accepted($r) : $r->{status} == 400;
}
is($agree, 20, "20 batches through the edge ($whole wholly valid): "
   . '"[accepted]" exactly for those');
is(count("webhook_event WHERE provider = 'adyen' AND provider_event_id IN ("
         . join(',', map { my $c = $_; map {
               "'$c->{event_ids}[$_]'" } grep { $c->{expect}[$_] eq 'valid' }
               0 .. $#{ $c->{expect} } } @{ $doc->{cases} }) . ')'),
   scalar(map { grep { $_ eq 'valid' } @{ $_->{expect} } } @{ $doc->{cases} }),
   '... and every item the library finds valid is stored');

is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

$sb->teardown;
done_testing;
