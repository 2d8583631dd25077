#!/usr/bin/perl
#
# Bodies and clocks through a live nginx.  Impossible:
#   - a body that spilled to a temp file (small client_body_buffer_size)
#     or arrived chunked failing verification, or being stored altered
#   - one changed byte, or the same JSON re-serialized, being stored
#   - a timestamp outside the tolerance, either way, being accepted
#   - a body over client_max_body_size reaching the handler (413, also
#     chunked), or any method but POST (405 with Allow: POST)
#   - a signed body that is not an event (empty, array) being stored as
#     one, or lost: it is kept as malformed, answered 400
#   - a body nested past the parser's stack answered 503 (retried for
#     ever): it can never parse, so it is malformed
#   - a delivery signed with the second of two rotated secrets refused

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_headers stripe_sign);

my $secret = 'whsec_live_test_secret_1';
my $rolled = 'whsec_live_test_secret_2';

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $secrets = $sb->write_file('stripe.secret', "# current\n$secret\n$rolled\n");

$sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "%%PG%%";
    server {
        listen 127.0.0.1:%%PORT%%;
        client_max_body_size 1m;

        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
            client_body_buffer_size 8k;
        }

        location = /webhooks/small {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
            client_max_body_size 16k;
        }
    }
HTTP

$sb->register_account('carol', 3001);

sub new_deposit {
    return $sb->create_deposit(client => 'carol', login => 3001,
                               amount => $_[0]);
}

sub counts {
    return $sb->sql1('SELECT (SELECT count(*) FROM mt5credit.webhook_event)'
                     . " || '/' || (SELECT count(*) FROM mt5credit.mt5_credit)");
}

sub post {
    my ($path, $body, %opt) = @_;
    my $headers = $opt{headers} || stripe_headers($opt{secret} || $secret,
                                                  $body, $opt{t});
    return $sb->http('POST', $path, headers => $headers, body => $body, %opt);
}

sub stored_sha {
    my ($body) = @_;
    return $sb->sql1("SELECT encode(body_sha256, 'hex') FROM "
                     . "mt5credit.webhook_event WHERE body_sha256 = "
                     . "decode('" . sha256_hex($body) . "', 'hex')") // '';
}

# --- a plain delivery -------------------------------------------------

my $dep = new_deposit(50000);
my $body = stripe_event(deposit => $dep, amount => 50000);
my $res = post('/webhooks/stripe', $body);
is($res->{status}, 200, 'a freshly signed event is accepted');
like($res->{body}, qr/"outcome":"credit_created"/, 'and creates a credit');

# --- bytes ------------------------------------------------------------

{
    my $dep2 = new_deposit(12345);
    my $good = stripe_event(deposit => $dep2, amount => 12345);
    my $headers = stripe_headers($secret, $good);
    my $before = counts();

    (my $changed = $good) =~ s/12345/12346/;
    $res = post('/webhooks/stripe', $changed, headers => $headers);
    is("$res->{status} $res->{body}", '400 {"error":"bad_signature"}',
       'one changed byte is refused');

    (my $compact = $good) =~ s/\n\s*//g;
    $res = post('/webhooks/stripe', $compact, headers => $headers);
    is($res->{status}, 400, 'the same JSON re-serialized is refused');

    (my $crlf = $good) =~ s/\n/\r\n/g;
    $res = post('/webhooks/stripe', $crlf, headers => $headers);
    is($res->{status}, 400, 'LF turned into CRLF is refused');

    is(counts(), $before, 'and none of them stored anything');

    $res = post('/webhooks/stripe', $good, headers => $headers);
    is($res->{status}, 200, 'the original bytes still pass');
}

# --- temp file and chunked ---------------------------------------------

{
    my $dep3 = new_deposit(70000);
    my $pad = 'x' x (300 * 1024);
    (my $big = stripe_event(deposit => $dep3, amount => 70000))
        =~ s/"livemode": false/"livemode": false, "padding": "$pad"/;
    ok(length($big) > 300 * 1024, 'a 300 KB event');

    my $from = $sb->error_log_size;
    $res = post('/webhooks/stripe', $big);
    is($res->{status}, 200, 'a body spilled to a temp file verifies');
    like($sb->error_log($from), qr/buffered to a temporary file/,
         '(nginx did buffer it to a file)');
    is(stored_sha($big), sha256_hex($big), 'and is stored byte for byte');
}

{
    my $dep4 = new_deposit(80000);
    my $chunked = stripe_event(deposit => $dep4, amount => 80000);
    $res = post('/webhooks/stripe', $chunked, chunked => 1, chunk => 7);
    is($res->{status}, 200, 'a chunked body (7-byte chunks) verifies');
    is(stored_sha($chunked), sha256_hex($chunked), 'and is stored de-chunked, exact');

    my $dep5 = new_deposit(80001);
    my $big = stripe_event(deposit => $dep5, amount => 80001);
    $big =~ s/"livemode": false/'"livemode": false, "padding": "' . ('y' x 40000) . '"'/e;
    $res = post('/webhooks/stripe', $big, chunked => 1, chunk => 4096);
    is($res->{status}, 200, 'a chunked body larger than the buffer verifies');
    is(stored_sha($big), sha256_hex($big), 'and is stored exact');
}

# --- limits and methods ---------------------------------------------------

{
    my $before = counts();
    my $huge = '{"pad": "' . ('z' x (20 * 1024)) . '"}';
    $res = post('/webhooks/small', $huge);
    is($res->{status}, 413, 'a body over client_max_body_size gets 413');
    $res = post('/webhooks/small', $huge, chunked => 1, chunk => 4096);
    is($res->{status}, 413, 'also when it comes chunked');

    $res = $sb->http('GET', '/webhooks/stripe');
    is($res->{status}, 405, 'GET gets 405');
    is($res->{headers}{allow}, 'POST', 'with Allow: POST');
    $res = $sb->http('PUT', '/webhooks/stripe', body => '{}',
                     headers => stripe_headers($secret, '{}'));
    is($res->{status}, 405, 'a signed PUT gets 405 too');

    for my $not_event ('', '[]', '"text"', '{"no": "id"}') {
        $res = post('/webhooks/stripe', $not_event);
        is("$res->{status} $res->{body}", '400 {"error":"malformed_body"}',
           "a signed body that is not an event ('$not_event') is refused");
    }
    is(counts(), $before, 'none of that stored anything');
    is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_malformed"), 4,
       '... as an event: the four signed non-events are kept as malformed, '
       . 'the empty one too');

    # nested past the parser's stack: can never parse, so never 503
    my $deep = '{"id": "evt_deep", "a": ' . ('[' x 60000) . (']' x 60000)
             . '}';
    for my $try (1, 2) {
        $res = post('/webhooks/stripe', $deep);
        is("$res->{status} $res->{body}", '400 {"error":"malformed_body"}',
           "a signed body nested 60,000 deep is refused as malformed, "
           . "delivery $try (not 503: it can never pass)");
    }
    is($sb->sql1("SELECT deliveries || ' ' || (body_sha256 = sha256("
                 . "convert_to('$deep', 'UTF8'))) || ' ' || (reason LIKE "
                 . "'body is JSON past what can be parsed%') FROM "
                 . "mt5credit.webhook_malformed WHERE length(raw_body) = "
                 . length($deep)), '2 true true',
       '... kept once with its exact bytes, the reason and both deliveries');
    is(counts(), $before, '... and no event or credit came of it');
}

# --- the clock -------------------------------------------------------------

{
    my $before = counts();
    my $ev = stripe_event(deposit => new_deposit(100), amount => 100);

    $res = post('/webhooks/stripe', $ev, t => time - 330);
    is("$res->{status} $res->{body}", '400 {"error":"timestamp_too_old"}',
       'a signature 330 s old is refused (tolerance 5m)');
    $res = post('/webhooks/stripe', $ev, t => time + 330);
    is("$res->{status} $res->{body}", '400 {"error":"timestamp_in_future"}',
       'a signature 330 s in the future is refused');
    is(counts(), $before, 'stale and future signatures store nothing');
    like($sb->error_log, qr/reason=timestamp_too_old skew=3[0-9]{2}s/,
         'the log says how far off the clock was');

    $res = post('/webhooks/stripe', $ev, t => time - 270);
    is($res->{status}, 200, 'a signature 270 s old is accepted');
}

# --- rotation --------------------------------------------------------------

{
    my $ev = stripe_event(deposit => new_deposit(200), amount => 200);
    $res = post('/webhooks/stripe', $ev, secret => $rolled);
    is($res->{status}, 200, 'the second secret of a rotation verifies');

    my $t = time;
    my $both = stripe_sign('whsec_not_ours', $ev, $t) . ',v1='
             . (split /v1=/, stripe_sign($secret, $ev, $t))[1];
    $res = post('/webhooks/stripe', $ev,
                headers => [ [ 'Stripe-Signature', $both ] ]);
    is($res->{status}, 200, 'any of several v1 signatures may match');
}

my $log = $sb->error_log;
unlike($log, qr/\Q$secret\E|\Q$rolled\E/, 'no secret in the error log');
is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');
is($sb->stop_nginx, 0, 'nginx stops cleanly');
is_deeply([ $sb->log_problems ], [], 'and leaves no socket open');

done_testing;
