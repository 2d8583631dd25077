#!/usr/bin/perl
#
# A header line too long for nginx's buffers is logged by nginx itself,
# at info, with its start: for a webhook, "Stripe-Signature: t=...,v1=".
# Impossible:
#   - a signature reaching a log from a server whose error_log is at
#     notice, as docs/nginx-directives.md says to run a webhook server
#   - a webhook server logging at info or debug without nginx -t saying
#     so (the control below shows why it matters)

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_sign);

my $secret = 'whsec_oversize_header_test';

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $secrets = $sb->write_file('stripe.secret', "$secret\n");
my $dir = $sb->dir;
my $loud = Mt5Credit::Sandbox::free_port();

my $http = <<"HTTP";
    mt5_credit_postgres "%%PG%%";
    server {
        listen 127.0.0.1:%%PORT%%;
        error_log $dir/quiet.log notice;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
    }
    server {
        listen 127.0.0.1:$loud;
        error_log $dir/loud.log info;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
    }
HTTP

my ($ok, $out) = $sb->nginx_test_config($sb->nginx_conf($http));
ok($ok, 'the configuration passes nginx -t') or diag $out;
my @warned = $out =~ /("mt5_credit_webhook" in \S+:\d+ logs at info or debug)/g;
is(scalar @warned, 1, 'nginx -t warns about the server logging at info, '
   . 'and only that one') or diag $out;
like($out, qr/which may be a signature; use "error_log \.\.\. notice" in its server/,
     '... saying what to do');

$sb->start_nginx($http);

# a genuine signature in a header line past the 8 kB buffer
my $body = stripe_event(type => 'customer.created');
my $sig = stripe_sign($secret, $body, time);
my ($v1) = $sig =~ /v1=([0-9a-f]{64})/;
my $long = $sig . ',v0=' . ('0' x 9000);

for my $port ($sb->nginx_port, $loud) {
    my $res = $sb->http('POST', '/webhooks/stripe', body => $body,
                        port => $port,
                        headers => [ [ 'Stripe-Signature', $long ],
                                     [ 'Content-Type', 'application/json' ] ]);
    like($res->{status}, qr/^4\d\d$/,
         "an oversize signature header is refused by nginx ($res->{status})");
}

sub slurp {
    open my $fh, '<', $_[0] or return '';
    local $/;
    return <$fh> // '';
}

my $logs = join '', map { slurp($_) } "$dir/quiet.log", "$dir/error.log";
like(slurp("$dir/loud.log"), qr/too long header line/,
     '(nginx logged the refusal at info)');
unlike($logs, qr/\Q$v1\E|\Q${\ substr($v1, 0, 16)}\E/,
       'the server at notice: no signature in any of its logs');
like(slurp("$dir/loud.log"), qr/\Q${\ substr($v1, 0, 16)}\E/,
     'the control, a server at info: the signature is in its log, as '
     . 'nginx -t warned');

done_testing();
