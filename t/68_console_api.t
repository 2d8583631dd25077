#!/usr/bin/perl
#
# The console through nginx (mt5_credit_console): the shipped pages and
# the JSON API, answered by the database as the person nginx let in
# (auth_basic here), on the console's own pool and login.  Impossible:
#   - a page or an answer without the strict Content-Security-Policy,
#     nosniff and no framing; an API answer a browser or proxy may keep
#   - anyone past nginx acting as someone else: the person is the one
#     auth_basic named, and the database records that name
#   - someone nginx let in but who is no person in the database (no role,
#     or an operator role that is no person) seeing anything: 403
#   - a reader reading what only an operator may (case_show): 403
#   - an argument reaching SQL unchecked (quotes, a non-number id): 400
#   - an unknown endpoint or method answered as if it were one
#   - a console location without its pool, said only at the first
#     request: nginx -t names the file and line

use strict;
use warnings;

use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $json = JSON::PP->new;

my $st = Mt5Credit::Stack->new(
    nginx_http => 'mt5_credit_console_postgres "host=127.0.0.1 '
                . 'port=%%PGPORT%% dbname=mt5credit user=web";',
    locations => "location /console/ {
            auth_basic \"mt5-credit\";
            auth_basic_user_file %%DIR%%/htpasswd;
            mt5_credit_console;
            alias $ROOT/ngx_mt5_credit_module/console/;
        }");
my $sb = $st->sb;
$st->account(login => 70681);

my $hash = `openssl passwd -apr1 -salt mt5cred pw`;
chomp $hash;
$sb->write_file('htpasswd', join '', map { "$_:$hash\n" }
                qw(ann rita bot mallory));

$sb->psql(<<'SQL');
CREATE ROLE ann  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE rita NOLOGIN IN ROLE mt5credit_reader, mt5credit_person;
CREATE ROLE bot  NOLOGIN IN ROLE mt5credit_operator;
CREATE ROLE web  LOGIN NOINHERIT IN ROLE mt5credit_console;
GRANT ann, rita, bot TO web;
SQL

my $credit = $st->pay(login => 70681, amount => 1200);
$sb->psql(<<"SQL");
BEGIN;
UPDATE mt5credit.mt5_credit SET status = 'claimed', attempts = 1,
    claimed_at = now(), claimed_by = 'fixture',
    lease_expires_at = now() + interval '1 minute' WHERE id = $credit;
UPDATE mt5credit.mt5_credit SET status = 'failed' WHERE id = $credit;
SELECT mt5credit.open_case('mt5_rejected', 'high', 'console-api-1',
                           '{"retcode": 10019}', $credit);
COMMIT;
SQL
my $case = $sb->sql1("SELECT id FROM mt5credit.case "
                     . "WHERE dedupe_key = 'console-api-1'");

sub get {
    my ($who, $path, %opt) = @_;
    my @h = $who ? ([ 'Authorization', 'Basic '
                      . encode_base64("$who:pw", '') ]) : ();
    return $sb->http($opt{method} || 'GET', "/console/$path",
                     headers => \@h, body => $opt{body});
}

# --- the pages --------------------------------------------------------------

my $r = get(undef, '');
is($r->{status}, 401, 'no credentials: nginx asks for them (401)');

$r = get('ann', '');
is($r->{status}, 200, 'the console\'s page, for a person nginx let in');
like($r->{body}, qr{<script src="console\.js" defer></script>},
     '... its script a file of its own');
unlike($r->{body}, qr{<script>|\son[a-z]+=}i, '... and none inline');
like($r->{headers}{'content-security-policy'},
     qr/default-src 'none'; script-src 'self';.*frame-ancestors 'none'/,
     '... under a strict Content-Security-Policy');
is($r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff');
is($r->{headers}{'x-frame-options'}, 'DENY', '... never framed');
$r = get('ann', 'console.js');
is($r->{status}, 200, 'console.js is served');
like($r->{headers}{'content-security-policy'}, qr/script-src 'self'/,
     '... with the policy too');

# --- who is asking ------------------------------------------------------------

$r = get('ann', 'api/whoami');
is($r->{status}, 200, 'api/whoami as ann');
is_deeply($json->decode($r->{body}), { person => 'ann', act => JSON::PP::true,
                                       read => JSON::PP::true },
          '... ann, who may act');
like($r->{headers}{'content-type'}, qr{^application/json}, '... JSON');
is($r->{headers}{'cache-control'}, 'no-store', '... never kept');
like($r->{headers}{'content-security-policy'}, qr/default-src 'none'/,
     '... under the policy');

$r = get('rita', 'api/whoami');
is_deeply($json->decode($r->{body}), { person => 'rita', act => JSON::PP::false,
                                       read => JSON::PP::true },
          'rita: may read, not act');

$r = get('mallory', 'api/whoami');
is($r->{status}, 403, 'mallory passed nginx but has no role: 403');
is($json->decode($r->{body})->{error}, 'forbidden', '... forbidden');
$r = get('bot', 'api/whoami');
is($r->{status}, 403, 'bot is an operator role but no person: 403');

# --- the case queue -----------------------------------------------------------

$r = get('ann', 'api/cases');
is($r->{status}, 200, 'api/cases as ann');
my $cases = $json->decode($r->{body});
is(scalar @$cases, 1, '... one case');
is($cases->[0]{id}, $case, '... the planted one');
is($cases->[0]{kind}, 'mt5_rejected', '... with its kind');
is($json->decode(get('ann', 'api/cases?kind=no_such_kind')->{body})->[0],
   undef, '... filtered by kind');
is(scalar @{ $json->decode(get('rita', 'api/cases')->{body}) }, 1,
   'rita (a reader) sees the queue');

$r = get('ann', "api/case?id=$case");
is($r->{status}, 200, 'api/case as ann');
like($r->{body}, qr/"credit_history"/, '... with the credit\'s history');
is(get('ann', 'api/case?id=999999')->{status}, 404, 'a case that is not there: 404');
is(get('rita', "api/case?id=$case")->{status}, 403,
   'rita may not open a case (case_show is the desk\'s): 403');

# --- what never reaches SQL -------------------------------------------------

is(get('ann', "api/case?id=1%27%3B%20DROP%20TABLE%20x")->{status}, 400,
   'an id that is not a number: 400');
is(get('ann', 'api/case')->{status}, 400, 'no id: 400');
is(get('ann', "api/cases?kind=x%27%20OR%201%3D1")->{status}, 400,
   'a kind with a quote: 400');
is(get('ann', 'api/nothing')->{status}, 404, 'an unknown endpoint: 404');
$r = get('ann', 'api/whoami', method => 'DELETE');
is($r->{status}, 405, 'DELETE: 405');
is($r->{headers}{allow}, 'GET, HEAD', '... saying what is allowed');
is($sb->sql1("SELECT count(*) FROM mt5credit.case"), 1, 'nothing changed');

my @refused = grep { /console: refused \(/ } split /\n/, $sb->error_log;
ok(@refused >= 2, 'each refusal is logged with the database\'s reason');

# --- the configuration --------------------------------------------------------

my $conf = $sb->nginx_conf(<<'HTTP');
    server {
        listen 127.0.0.1:%%PORT%%;
        location /console/ { mt5_credit_console; }
    }
HTTP
my ($ok, $out) = $sb->nginx_test_config($conf);
ok(!$ok, 'nginx -t: a console location without its pool fails');
like($out, qr/"mt5_credit_console" in \S+:\d+ needs "mt5_credit_console_postgres" at http level/,
     '... naming the file and line and what it needs');

$conf = $sb->nginx_conf(<<'HTTP');
    mt5_credit_console_postgres "host=db.example dbname=mt5credit user=web";
HTTP
($ok, $out) = $sb->nginx_test_config($conf);
ok(!$ok, 'nginx -t: a console pool on a host name fails');
like($out, qr/mt5_credit_console_postgres host "db\.example" is a name/,
     '... saying it would block the worker, under its own directive');

done_testing;
