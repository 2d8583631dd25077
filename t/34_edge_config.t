#!/usr/bin/perl
#
# Configuration mistakes fail "nginx -t", naming the directive (or the
# problem) and the file:line, and never printing a secret.  Impossible:
#   - a typo in a directive or a value starting a server that then
#     refuses or mis-verifies every webhook
#   - a webhook location without a scheme, a secret, or a database
#   - a PostgreSQL or Redis host name that would block the worker on DNS,
#     also one that PGHOST or a service file would give
#   - a secret file that is missing, empty, or not valid for its scheme
#   - a timeout of 0 (every webhook a 503), an "if" in a webhook location
#     (every delivery loses its provider), a conninfo error split from
#     its place

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
my $stripe = $sb->write_file('stripe.secret', "whsec_config_secret\n");
my $std = $sb->write_file('std.secret',
                          "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
my $notb64 = $sb->write_file('bad.secret', "whsec_not*base64!secret\n");
my $empty = $sb->write_file('empty.secret', "# nothing here\n\n");

sub config {
    my (%o) = @_;
    my $pg = exists $o{pg} ? $o{pg}
           : 'mt5_credit_postgres "host=127.0.0.1 port=5432 dbname=x";';
    my $loc = $o{loc} // "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stripe;\n"
                       . "            mt5_credit_secret_file $stripe;";
    my $http = $o{http} // '';
    return $sb->nginx_conf(<<"HTTP");
    $pg
    $http
    server {
        listen 127.0.0.1:%%PORT%%;
        location /hook {
            $loc
        }
    }
HTTP
}

# line numbers: nginx_conf puts "http {" on line 9; the directives above
# follow it in order
sub line_of {
    my ($conf, $text) = @_;
    my @lines = split /\n/, $conf;
    for my $i (0 .. $#lines) {
        return $i + 1 if index($lines[$i], $text) >= 0;
    }
    die "'$text' not in config";
}

sub fails_like {
    my ($what, $conf, $re, $at) = @_;
    my ($ok, $out) = $sb->nginx_test_config($conf);
    ok(!$ok, "$what: nginx -t fails");
    like($out, $re, "$what: says what is wrong") or diag($out);
    if (defined $at) {
        my $line = line_of($conf, $at);
        like($out, qr{test\.conf:$line\b}, "$what: and where (line $line)")
            or diag($out);
    }
    unlike($out, qr/whsec_config_secret|MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw|not\*base64/,
           "$what: prints no secret");
}

my ($ok, $out) = $sb->nginx_test_config(config());
ok($ok, 'a correct configuration passes nginx -t') or diag($out);

fails_like('misspelt directive',
           config(loc => "mt5_credit_webhok stripe;"),
           qr/unknown directive "mt5_credit_webhok"/, 'mt5_credit_webhok');

fails_like('unknown scheme',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stirpe;\n"
                       . "            mt5_credit_secret_file $stripe;"),
           qr/unknown signature scheme "stirpe"/, 'stirpe');

my $adyen_bad = $sb->write_file('secrets/adyen-bad', "not-hex-at-all\n");
fails_like('an Adyen key that is not hex',
           config(loc => "mt5_credit_webhook adyen;\n"
                       . "            mt5_credit_signature adyen;\n"
                       . "            mt5_credit_secret_file $adyen_bad;"),
           qr/adyen-bad" line 1: not a valid secret for this signature scheme \(expected the HMAC key in hex/);

fails_like('adyen with a parameter',
           config(loc => "mt5_credit_webhook adyen;\n"
                       . "            mt5_credit_signature adyen header=x;\n"
                       . "            mt5_credit_secret_file $adyen_bad;"),
           qr/signature scheme "adyen" takes no parameters/,
           'mt5_credit_signature adyen header=x');

fails_like('hmac without its header',
           config(loc => "mt5_credit_webhook psp;\n"
                       . "            mt5_credit_signature hmac-sha256 encoding=hex;\n"
                       . "            mt5_credit_secret_file $stripe;"),
           qr/needs "header=<name>"/, 'encoding=hex;');

fails_like('hmac with a bad parameter',
           config(loc => "mt5_credit_webhook psp;\n"
                       . "            mt5_credit_signature hmac-sha256 header=X-Sig encoding=hexx;\n"
                       . "            mt5_credit_secret_file $stripe;"),
           qr/invalid parameter "encoding=hexx"/, 'encoding=hexx');

fails_like('parameters on stripe',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stripe header=X;\n"
                       . "            mt5_credit_secret_file $stripe;"),
           qr/takes no parameters/, 'stripe header=X');

fails_like('webhook without a secret file',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stripe;"),
           qr/"mt5_credit_webhook" in \S+test\.conf:\d+ needs "mt5_credit_secret_file"/);

fails_like('webhook without a scheme',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_secret_file $stripe;"),
           qr/"mt5_credit_webhook" in \S+test\.conf:\d+ needs "mt5_credit_signature"/);

fails_like('webhook without a database',
           config(pg => ''),
           qr/"mt5_credit_webhook" in \S+test\.conf:\d+ needs "mt5_credit_postgres"/);

fails_like('missing secret file',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stripe;\n"
                       . "            mt5_credit_secret_file /nonexistent/secret;"),
           qr{"/nonexistent/secret".*cannot be opened.*No such file});

fails_like('empty secret file',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stripe;\n"
                       . "            mt5_credit_secret_file $empty;"),
           qr/holds no secret/);

fails_like('a Standard Webhooks secret that is not base64',
           config(loc => "mt5_credit_webhook psp;\n"
                       . "            mt5_credit_signature standard;\n"
                       . "            mt5_credit_secret_file $notb64;"),
           qr/bad\.secret" line 1: not a valid secret .*base64/);

($ok, $out) = $sb->nginx_test_config(config(
    loc => "mt5_credit_webhook psp;\n"
         . "            mt5_credit_signature standard;\n"
         . "            mt5_credit_secret_file $std;"));
ok($ok, 'a valid Standard Webhooks secret passes') or diag($out);

fails_like('bad provider name',
           config(loc => "mt5_credit_webhook Stripe!;"),
           qr/invalid provider name "Stripe!"/, 'Stripe!');

fails_like('bad conninfo',
           config(pg => 'mt5_credit_postgres "host=127.0.0.1 port";'),
           qr/invalid libpq conninfo/, 'host=127.0.0.1 port');
{
    my $conf = config(pg => 'mt5_credit_postgres "host=127.0.0.1 port";');
    my (undef, $out) = $sb->nginx_test_config($conf);
    my $line = line_of($conf, 'host=127.0.0.1 port');
    like($out, qr/invalid libpq conninfo: [^\n]*\S in \S+test\.conf:$line\b/,
         'bad conninfo: the reason and the place on one line') or diag($out);
}

for my $t (qw(mt5_credit_postgres_query_timeout
              mt5_credit_postgres_connect_timeout
              mt5_credit_postgres_queue_timeout
              mt5_credit_postgres_idle_timeout mt5_credit_redis_timeout)) {
    fails_like("$t 0 (every webhook a 503)",
               config(http => "$t 0;"),
               qr/"$t" directive must be more than 0/, "$t 0;");
}

fails_like('an "if" in the webhook location (it would lose the provider)',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stripe;\n"
                       . "            mt5_credit_secret_file $stripe;\n"
                       . "            if (\$request_method = PUT) { }"),
           qr/"if" inside the "mt5_credit_webhook" location of \S+test\.conf:\d+ is not supported/);
($ok, $out) = $sb->nginx_test_config(config(
    loc => "mt5_credit_webhook stripe;\n"
         . "            mt5_credit_signature stripe;\n"
         . "            mt5_credit_secret_file $stripe;\n"
         . "            limit_except POST { deny all; }"));
ok($ok, '... while limit_except, which only refuses methods, passes')
    or diag($out);

fails_like('database without host or hostaddr (PGHOST or a service '
           . 'file would decide, unchecked)',
           config(pg => 'mt5_credit_postgres "port=5432 dbname=x";'),
           qr/mt5_credit_postgres needs host= \(an IP address or a socket directory\) or hostaddr=/,
           'port=5432 dbname=x');

fails_like('a service file (its host is read at each connect)',
           config(pg => 'mt5_credit_postgres "service=edge host=127.0.0.1";'),
           qr/service= is not supported: spell host= or hostaddr=/,
           'service=edge');

fails_like('database host needing DNS',
           config(pg => 'mt5_credit_postgres "host=db.example.com dbname=x";'),
           qr/host "db\.example\.com" is a name: resolving it would block/,
           'db.example.com');

($ok, $out) = $sb->nginx_test_config(config(
    pg => 'mt5_credit_postgres "host=/run/postgresql,127.0.0.1 dbname=x";'));
ok($ok, 'a socket directory and an IP are fine') or diag($out);

fails_like('duplicate mt5_credit_postgres',
           config(http => 'mt5_credit_postgres "host=127.0.0.1 dbname=y";'),
           qr/"mt5_credit_postgres" directive is duplicate/,
           'dbname=y');

fails_like('pool size 0',
           config(http => 'mt5_credit_postgres_pool_size 0;'),
           qr/pool_size.*must be between 1 and 1024|value must be/,
           'pool_size 0');
fails_like('a batch of no webhook',
           config(http => 'mt5_credit_postgres_batch 0;'),
           qr/value must be between 1 and 256/, 'mt5_credit_postgres_batch 0');
fails_like('a batch larger than the edge builds',
           config(http => 'mt5_credit_postgres_batch 257;'),
           qr/value must be between 1 and 256/,
           'mt5_credit_postgres_batch 257');
fails_like('a batch size that is not a number',
           config(http => 'mt5_credit_postgres_batch many;'),
           qr/"mt5_credit_postgres_batch" directive invalid number/,
           'mt5_credit_postgres_batch many');
($ok, $out) = $sb->nginx_test_config(config(
    http => 'mt5_credit_postgres_batch 1;'));
ok($ok, 'mt5_credit_postgres_batch 1 (one webhook per statement) passes')
    or diag($out);

fails_like('bad timeout',
           config(http => 'mt5_credit_postgres_query_timeout 10parsecs;'),
           qr/"mt5_credit_postgres_query_timeout" directive invalid value/,
           "10parsecs");

fails_like('bad tolerance',
           config(loc => "mt5_credit_webhook stripe;\n"
                       . "            mt5_credit_signature stripe;\n"
                       . "            mt5_credit_tolerance soon;\n"
                       . "            mt5_credit_secret_file $stripe;"),
           qr/"mt5_credit_tolerance" directive invalid value/, "soon");

fails_like('redis without a port',
           config(http => 'mt5_credit_redis 127.0.0.1;'),
           qr/needs a port/, 'mt5_credit_redis 127.0.0.1');

fails_like('redis host needing DNS',
           config(http => 'mt5_credit_redis redis.local:6379;'),
           qr/"redis\.local" is not an IP address/, 'redis.local');

fails_like('redis key with a space',
           config(http => 'mt5_credit_redis_key "wake up";'),
           qr/printable ASCII without spaces/, 'wake up');

fails_like('webhook at http level',
           config(http => 'mt5_credit_webhook stripe;'),
           qr/"mt5_credit_webhook" directive is not allowed here/,
           'mt5_credit_webhook stripe;');

done_testing;
