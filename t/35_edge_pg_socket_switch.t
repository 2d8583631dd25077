#!/usr/bin/perl
#
# libpq closing its socket and opening another in the middle of a
# connect: here the sslmode=prefer fallback (the server insists on TLS 1.3,
# the client offers at most 1.2, the handshake fails, libpq retries
# without TLS on a new socket, which usually gets the same fd number).
# Multi-host lists and target_session_attrs switch sockets the same way.
# Impossible:
#   - the new socket going unregistered (the connect hangs until its
#     timeout and every webhook gets 503)
#   - an epoll [alert] about a socket that is no longer there

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_headers);

my $sb = Mt5Credit::Sandbox->new;
my $pg = $sb->start_postgres;
$sb->stop_postgres;

my $data = $sb->dir . '/pg';
system("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "
       . "/CN=127.0.0.1 -keyout $data/server.key -out $data/server.crt "
       . ">/dev/null 2>&1") == 0 or die 'openssl failed';
chmod 0600, "$data/server.key";
open my $fh, '>>', "$data/postgresql.conf" or die;
print $fh "ssl = on
ssl_min_protocol_version = 'TLSv1.3'
";
close $fh;
$sb->start_postgres;

my $secret = 'whsec_multihost';
my $file = $sb->write_file('secret', "$secret\n");

$sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "hostaddr=127.0.0.1 port=$pg dbname=mt5credit user=edge sslmode=prefer ssl_max_protocol_version=TLSv1.2";
    mt5_credit_postgres_connect_timeout 60s;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $file;
        }
    }
HTTP

$sb->register_account('henry', 8001);

for my $i (1 .. 3) {
    my $dep = $sb->create_deposit(client => 'henry', login => 8001,
                                  amount => 100 + $i);
    my $body = stripe_event(deposit => $dep, amount => 100 + $i);
    # a hang until the 60 s connect timeout shows as an HTTP timeout here
    my $res = eval {
        $sb->http('POST', '/webhooks/stripe', body => $body,
                  headers => stripe_headers($secret, $body), timeout => 20)
    } || { status => "none ($@)" };
    is($res->{status}, 200,
       "delivery $i is stored over the socket libpq fell back to");
}

is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');
is($sb->stop_nginx, 0, 'nginx stops cleanly');
is_deeply([ $sb->log_problems ], [], 'and leaves no socket open');

done_testing;
