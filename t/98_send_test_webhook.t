#!/usr/bin/perl
#
# `mt5credit send-test-webhook`, the platform team's check of a running
# edge, against nginx with the module, for every scheme.  Impossible:
#   - a correctly configured edge refusing the tool's event, or the event
#     not becoming a credit for the named deposit
#   - a wrong secret, or a stale signature, reported as success
#   - the secret printed by the tool
#   - a bad option passing silently

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Worker;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->start_redis;
$sb->register_account('alice', 1981, 'USD');

my $stripe = 'whsec_testhook_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 16);
my $standard = 'whsec_dGVzdGhvb2stc3RhbmRhcmQta2V5LTMyLWJ5dGVzIQ==';
my $hmac = 'testhook-hmac-' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 16);
my %file = (
    stripe   => $sb->write_file('th/stripe', "$stripe\n"),
    standard => $sb->write_file('th/standard', "$standard\n"),
    hmac     => $sb->write_file('th/hmac', "$hmac\n"),
    wrong    => $sb->write_file('th/wrong', "whsec_not_the_one\n"),
);

my $port = $sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "%%PG%%";
    mt5_credit_redis %%REDIS%%;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $file{stripe};
        }
        location = /webhooks/acmepay {
            mt5_credit_webhook acmepay;
            mt5_credit_signature standard;
            mt5_credit_secret_file $file{standard};
        }
        location = /webhooks/hmacpay {
            mt5_credit_webhook hmacpay;
            mt5_credit_signature hmac-sha256 header=X-Signature encoding=hex prefix=sha256=;
            mt5_credit_secret_file $file{hmac};
        }
    }
HTTP

my $n = 0;
sub deposit {
    my ($provider) = @_;
    return $sb->create_deposit(client => 'alice', login => 1981,
                               amount => 12345, provider => $provider,
                               key => 'testhook-' . ++$n);
}

sub send_hook {
    my (@args) = @_;
    return Mt5Credit::Worker::run($sb, 'send-test-webhook', @args);
}

sub credited {
    my ($ref) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
                     . "mt5credit.deposit d ON d.id = c.deposit_id WHERE "
                     . "d.reference = '$ref' AND c.paid_amount_minor = 12345");
}

my $base = "http://127.0.0.1:$port/webhooks";

for my $case ([ 'stripe', 'stripe', [] ],
              [ 'standard', 'acmepay', [] ],
              [ 'hmac-sha256', 'hmacpay', [ '--header', 'X-Signature',
                                            '--encoding', 'hex',
                                            '--prefix', 'sha256=' ] ]) {
    my ($scheme, $provider, $extra) = @$case;
    my $ref = deposit($provider);
    my ($rc, $out) = send_hook('--url', "$base/$provider", '--scheme', $scheme,
        '--secret-file', $file{ $scheme eq 'hmac-sha256' ? 'hmac' : $scheme },
        '--deposit', $ref, '--amount', '123.45', '--currency', 'USD',
        @$extra);
    is($rc, 0, "$scheme: the edge accepts the tool's event") or diag $out;
    like($out, qr/HTTP 200 .*credit_created/, '... and says a credit was made');
    is(credited($ref), 1, "... for $ref, of 123.45");
}

{
    my $ref = deposit('stripe');
    my ($rc, $out) = send_hook('--url', "$base/stripe", '--secret-file',
                               $file{wrong}, '--deposit', $ref);
    is($rc, 1, 'a wrong secret: exit 1');
    like($out, qr/HTTP 400/, '... the edge said 400');
    is(credited($ref), 0, '... nothing credited');

    ($rc, $out) = send_hook('--url', "$base/stripe", '--secret-file',
                            $file{stripe}, '--deposit', $ref,
                            '--amount', '123.45', '--stale');
    is($rc, 1, 'signed an hour ago: exit 1');
    like($sb->error_log, qr/timestamp_too_old/, '... refused as too old');
    unlike($out, qr/\Q$stripe\E/, 'the secret is never printed');
}

{
    my ($rc, $out) = send_hook('--url', "$base/stripe", '--scheme', 'paypal',
                               '--secret-file', $file{stripe},
                               '--deposit', 'dep_000001');
    is($rc, 2, 'an unknown scheme: exit 2');
    like($out, qr/stripe, standard or hmac-sha256/, '... naming the choices');
    ($rc, $out) = send_hook('--url', "$base/stripe", '--secret-file',
                            $file{stripe}, '--deposit', 'dep_000001',
                            '--amount', '1.234');
    is($rc, 2, 'an amount with three decimals: exit 2');
}

done_testing;
