#!/usr/bin/perl
#
# Every signature vector in t/vectors for the offered schemes
# (Stripe, Standard Webhooks, and the generic HMAC scheme as configured
# for Checkout.com, Coinbase Commerce and GitHub-style senders) goes
# through a live nginx with the module.  This proves impossible:
#   - a forged, altered, re-serialized or mis-encoded delivery being
#     stored (400 with the vector's reason, and not one row written)
#   - a genuine delivery being refused for its signature (a signed body
#     that is not an event is refused as malformed_body, not as forged)
#   - a secret or a signature appearing in the error log
#
# The vectors about the clock (timestamp_too_old / _in_future) run in the
# C unit test with each vector's own "now"; here every location accepts
# any age (mt5_credit_tolerance 100y), so those are skipped and the rest
# are judged on their bytes alone.  t/31 checks the live clock.
#
# One deliberate difference: "secret/configured-with-trailing-newline"
# expects bad_signature from a verifier handed the secret with its
# newline; the module trims secret-file lines (the classic misconfiguration
# the reference warns about), so through nginx that delivery is valid.

use strict;
use warnings;

use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;

my %files = (
    'stripe.json'                    => { scheme => 'stripe',
                                          provider => 'stripe' },
    'standard-webhooks.json'         => { scheme => 'standard',
                                          provider => 'swpsp' },
    'checkout-com.json'              => { provider => 'checkoutcom' },
    'coinbase-commerce.json'         => { provider => 'coinbase' },
    'github-hub-signature-256.json'  => { provider => 'githubstyle' },
);

my (%location, @cases, $conf);
my $json = JSON::PP->new->utf8;

for my $file (sort keys %files) {
    open my $fh, '<:raw', "$Mt5Credit::Sandbox::VECTORS/$file"
        or die "$file: $!";
    my $vectors = $json->decode(do { local $/; <$fh> });

    for my $v (@$vectors) {
        next if $v->{expect} =~ /^timestamp_/;

        my $sig = $files{$file}{scheme} || do {
            my $s = $v->{scheme};
            "hmac-sha256 header=$s->{header} encoding=$s->{encoding}"
                . ($s->{prefix} ? " prefix=$s->{prefix}" : '');
        };
        my @secrets = ($v->{secret}, @{ $v->{additional_secrets} || [] });
        my $key = join "\0", $file, $sig, @secrets;

        unless ($location{$key}) {
            my $n = keys(%location) + 1;
            my $secret_file = $sb->write_file("secrets/$n",
                join('', map { "$_\n" } @secrets));
            $location{$key} = "/v/$n";
            $conf .= <<"LOC";
        location = /v/$n {
            mt5_credit_webhook $files{$file}{provider};
            mt5_credit_signature $sig;
            mt5_credit_secret_file $secret_file;
            mt5_credit_tolerance 100y;
        }
LOC
        }

        push @cases, { %$v, file => $file, path => $location{$key} };
    }
}

$sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "%%PG%%";
    server {
        listen 127.0.0.1:%%PORT%%;
        client_max_body_size 1m;
$conf
    }
HTTP

my $count_sql = 'SELECT (SELECT count(*) FROM mt5credit.webhook_event) || '
              . "' ' || (SELECT count(*) FROM mt5credit.webhook_event_conflict)"
              . " || ' ' || (SELECT count(*) FROM mt5credit.case)";

my ($valid, $refused) = (0, 0);

for my $c (@cases) {
    my $name = "$c->{file}: $c->{name}";
    my $expect = $c->{expect};
    $expect = 'valid' if $c->{name} eq 'secret/configured-with-trailing-newline';

    my @headers;
    for my $h (sort keys %{ $c->{headers} }) {
        my $val = $c->{headers}{$h};
        push @headers, [ $h, $_ ] for ref $val ? @$val : ($val);
    }

    my $body = $c->{body};
    utf8::encode($body);

    my $before = $sb->sql1($count_sql);
    my $res = $sb->http('POST', $c->{path}, headers => \@headers,
                        body => $body);

    if ($expect eq 'valid') {
        $valid++;
        my $ok = $res->{status} == 200
              || ($res->{status} == 400
                  && $res->{body} =~ /"error":"malformed_body"/);
        ok($ok, "$name: accepted as genuine")
            or diag("got $res->{status} $res->{body}");
    } else {
        $refused++;
        is("$res->{status} $res->{body}", qq(400 {"error":"$expect"}),
           "$name: refused as $expect");
        is($sb->sql1($count_sql), $before, "$name: nothing stored");
    }
}

ok($valid >= 30, "$valid genuine deliveries went through nginx");
ok($refused >= 40, "$refused forged or broken deliveries were refused");

# the stored bodies are the bytes that were signed, not a re-serialization
my $stripe = (grep { $_->{name} eq 'body/unicode-raw-utf8'
                     && $_->{file} eq 'stripe.json' } @cases)[0];
my $raw = $stripe->{body};
utf8::encode($raw);
is($sb->sql1("SELECT encode(raw_body, 'hex') FROM mt5credit.webhook_event "
             . "WHERE encode(body_sha256, 'hex') = encode(sha256('\\x"
             . unpack('H*', $raw) . "'::bytea), 'hex')"),
   unpack('H*', $raw), 'a UTF-8 body is stored byte for byte');

my $log = $sb->error_log;
my $rejections = () = $log =~ /mt5_credit: webhook rejected: provider=\S+ scheme=\S+ reason=\S+/g;
ok($rejections >= $refused, 'every refusal left a log line naming '
   . 'provider, scheme and reason');

my @leaks;
for my $c (@cases) {
    for my $secret ($c->{secret}, @{ $c->{additional_secrets} || [] }) {
        (my $s = $secret) =~ s/^whsec_//;
        push @leaks, "secret of $c->{name}" if length $s >= 8
            && index($log, $s) >= 0;
    }
    for my $val (values %{ $c->{headers} }) {
        for my $v (ref $val ? @$val : ($val)) {
            while ($v =~ /([0-9a-f]{64}|[A-Za-z0-9+\/]{40,}=*)/g) {
                push @leaks, "signature of $c->{name}" if index($log, $1) >= 0;
            }
        }
    }
}
is_deeply(\@leaks, [], 'no secret and no signature in the error log');

is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');
is($sb->stop_nginx, 0, 'nginx stops cleanly');
is_deeply([ $sb->log_problems ], [], 'and leaves no socket open');

done_testing;
