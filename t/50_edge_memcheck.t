#!/usr/bin/perl
#
# The module under valgrind (nginx in one process), through the paths
# where memory mistakes hide: chunked bodies, bodies in temp files,
# forged deliveries, a client that disconnects mid-statement, PostgreSQL
# stopped and restarted under traffic, Redis stopped and restarted.
# Impossible: an invalid read or write, a use of uninitialised memory,
# a bad free; an alert in the log; a stop that does not complete.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_headers);

plan skip_all => 'valgrind not installed' unless `which valgrind` =~ /\S/;

my $sb = Mt5Credit::Sandbox->new;
my $vglog = $sb->dir . '/valgrind.log';
my $wrapper = $sb->write_file('nginx-valgrind', <<"SH");
#!/bin/sh
exec valgrind --error-exitcode=99 --log-file=$vglog $Mt5Credit::Sandbox::NGINX "\$@"
SH
chmod 0755, $wrapper;
local $Mt5Credit::Sandbox::NGINX = $wrapper;

$sb->start_postgres;
$sb->start_redis;
my $secret = 'whsec_memcheck';
my $file = $sb->write_file('secret', "$secret\n");

$sb->start_nginx(<<"HTTP", single => 1);
    mt5_credit_postgres "%%PG%%";
    mt5_credit_redis %%REDIS%%;
    mt5_credit_postgres_pool_size 2;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $file;
            client_body_buffer_size 1k;
        }
        location = /status { mt5_credit_status; }
    }
HTTP

$sb->register_account('val', 1);

my ($ok, $stored) = (0, 0);
for my $i (1 .. 30) {
    my $dep = $sb->create_deposit(client => 'val', login => 1, amount => 100);
    my $body = stripe_event(deposit => $dep, amount => 100);
    $body =~ s/"livemode"/"padding": "@{[ 'p' x 2000 ]}", "livemode"/
        if $i % 3 == 0;
    my $res = $sb->http('POST', '/webhooks/stripe', body => $body,
                        headers => stripe_headers($secret, $body),
                        chunked => $i % 2, chunk => 300);
    $ok++ if $res->{status} == 200;
    $sb->http('POST', '/webhooks/stripe', body => $body,
              headers => stripe_headers('whsec_forged', $body));

    if ($i == 10) {
        my $s = $sb->http_start('POST', '/webhooks/stripe', body => $body,
                                headers => stripe_headers($secret, $body));
        close $s;
    }
    if ($i == 15) {
        $sb->stop_postgres('fast');
        $sb->http('POST', '/webhooks/stripe', body => $body,
                  headers => stripe_headers($secret, $body));
        $sb->start_postgres;
        sleep 0.5;
    }
    $sb->stop_redis if $i == 20;
    if ($i == 25) { $sb->start_redis; sleep 1 }
}

ok($ok >= 29, "deliveries under valgrind were stored ($ok of 30)");

# bursts: under valgrind the two connections are slow, and the webhooks
# waiting for them go in batches (sql/062); in the second a client goes
# away while its webhook waits, and PostgreSQL stops under the third
sub burst {
    my ($n, %o) = @_;
    my @bodies = map {
        stripe_event(deposit => $sb->create_deposit(client => 'val',
                                                    login => 1,
                                                    amount => 100),
                     amount => 100) } 1 .. $n;
    my @s = map { $sb->http_start('POST', '/webhooks/stripe', body => $_,
                                  headers => stripe_headers($secret, $_)) }
            @bodies;
    close $s[$o{gone}] if defined $o{gone};
    $o{during}->() if $o{during};
    return map { defined $o{gone} && $_ == $o{gone}
                 ? () : Mt5Credit::Sandbox::http_end($s[$_], 60) } 0 .. $#s;
}
my $batched0 = ($sb->http('GET', '/status')->{body}
                =~ /^mt5credit_pg_batched_total (\d+)$/m)[0];
my @b = burst(12);
is(scalar(grep { $_->{status} == 200 } @b), 12,
   'a burst of 12 under valgrind: all 200');
@b = burst(12, gone => 5);
is(scalar(grep { $_->{status} == 200 } @b), 11,
   'a burst with a client gone: the other 11 200');
my $batched1 = ($sb->http('GET', '/status')->{body}
                =~ /^mt5credit_pg_batched_total (\d+)$/m)[0];
ok($batched1 > $batched0, 'some of them went in batches ('
   . ($batched1 - $batched0) . ')');
@b = burst(8, during => sub { $sb->stop_postgres('fast') });
is(scalar(grep { $_->{status} == 200 || $_->{status} == 503 } @b), 8,
   'a burst while PostgreSQL stops: each answered 200 or 503');
$sb->start_postgres;
is($sb->http('GET', '/status')->{status}, 200, 'the status page works');
is($sb->stop_nginx, 0, 'nginx stops cleanly (valgrind found no error)');

open my $fh, '<', $vglog or die "$vglog: $!";
my $report = do { local $/; <$fh> };
like($report, qr/ERROR SUMMARY: 0 errors/, 'valgrind: 0 errors')
    or diag($report);
is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');

done_testing;
