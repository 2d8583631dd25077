#!/usr/bin/perl
#
# The console's trust boundary (issue 29), as an attacker and an insider
# would try it, through a live nginx under valgrind and a PostgreSQL that
# logs every statement it receives.  Impossible:
#   - a refusal the edge makes (bad argument, unknown endpoint, a name of
#     no shape, wrong method, an action without its type, origin, token
#     or a body of text) reaching PostgreSQL: it receives no statement for
#     that request, whatever SQL its arguments, its endpoint or its name
#     carry, and no table changes
#   - a byte of a request or of a name becoming SQL text: what PostgreSQL
#     receives from the console is one fixed statement, the values apart
#     (issue 29's reproductions: a reader's GET that proposed as ann and
#     approved as ben; a name with a quote that wrote a note as ann)
#   - "header already sent", or any memory error, on any of these paths
#   - a role that is no person, a group role, the console's own login, a
#     name mapped to nobody, reading anything, on any endpoint
#   - one human as two people: "ann" and "ann@example.com" are one person,
#     who cannot approve their own proposal
#   - a name of 64 bytes landing on the role its first 63 name
#   - a token of another person, or older than its two windows; an Origin
#     that only matches the Host the client chose
#   - \u0000 or a lone surrogate in an action answered 500
#   - search and the owner filter refusing "@" and ":" (the page encodes
#     them)
#   - one person's actions beyond 60 a minute, however many names or hosts
#   - a name mapped to a person by anyone but a person admin at their own
#     login (the console's credentials, through a person who is also an
#     admin, included), or to a role that is no person

use strict;
use warnings;

use JSON::PP;
use Digest::SHA qw(hmac_sha256_hex sha256);
use File::Temp qw(tempdir);
use MIME::Base64 qw(encode_base64);
use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::ConsoleAttack qw(console_args console_sql console_attacks
                                uri_escape);
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $json = JSON::PP->new->canonical;
my $VALGRIND = `which valgrind` =~ /\S/;

my $keydir = tempdir('mt5credit-key-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $KEY = 'the trust boundary test key, at least thirty-two bytes';
open my $kf, '>', "$keydir/console.key" or die $!;
print $kf "$KEY\n";
close $kf;

# nginx in one process, under valgrind where it is installed (as t/50)
my ($vglog, $wrapper);
if ($VALGRIND) {
    $vglog = "$keydir/valgrind.log";
    $wrapper = "$keydir/nginx-valgrind";
    open my $w, '>', $wrapper or die $!;
    print $w "#!/bin/sh\nexec valgrind --error-exitcode=99 "
           . "--log-file=$vglog $Mt5Credit::Sandbox::NGINX \"\$@\"\n";
    close $w;
    chmod 0755, $wrapper;
}
local $Mt5Credit::Sandbox::NGINX = $wrapper if $VALGRIND;

my $st = Mt5Credit::Stack->new(
    nginx_single => 1,
    nginx_http => 'mt5_credit_console_postgres "host=127.0.0.1 '
                . 'port=%%PGPORT%% dbname=mt5credit user=web";'
                . "mt5_credit_console_key_file $keydir/console.key;",
    locations => "location /console/ {
            auth_basic \"mt5-credit\";
            auth_basic_user_file %%DIR%%/htpasswd;
            mt5_credit_console;
            mt5_credit_console_person \$remote_user;
            mt5_credit_console_origin https://desk.example.com;
            alias $ROOT/ngx_mt5_credit_module/console/;
        }");
my $sb = $st->sb;
$st->account(login => 70681);

# the names nginx lets in: people, and names an attacker chose
# (no ":" in it: Basic credentials end their user name there)
my $QUOTE = q{ann"; SELECT mt5credit.console_act(jsonb_build_object('action', 'note', 'case', 1, 'note', 'x')); --};
my $LONG = 'p' x 63;
my @names = ('ann', 'ann@example.com', 'ben', 'rita', 'bot',
             'mt5credit_operator', 'web', 'mallory', $QUOTE, $LONG,
             "${LONG}x");
my $hash = `openssl passwd -apr1 -salt mt5cred pw`;
chomp $hash;
$sb->write_file('htpasswd', join '', map { "$_:$hash\n" } @names);

$sb->psql(<<"SQL");
CREATE ROLE ann  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE ben  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE rita NOLOGIN IN ROLE mt5credit_reader, mt5credit_person;
CREATE ROLE bot  NOLOGIN IN ROLE mt5credit_operator;
CREATE ROLE $LONG NOLOGIN IN ROLE mt5credit_reader, mt5credit_person;
CREATE ROLE web  LOGIN NOINHERIT IN ROLE mt5credit_console;
GRANT ann, ben, rita, bot, $LONG TO web;
CREATE ROLE padmin LOGIN IN ROLE mt5credit_person_admin;
-- a person who is also a person admin, whose role the console may set
CREATE ROLE carol NOLOGIN IN ROLE mt5credit_operator, mt5credit_person,
    mt5credit_person_admin;
GRANT carol TO web;
SQL
# as a person admin does it, at their own login: one human, two names,
# one person
my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
sub persons {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'persons', '--database',
                                  "$db user=$who", @args);
}
for ([ 'ann', 'ann' ], [ 'ann@example.com', 'ann' ], [ 'ben', 'ben' ],
     [ 'rita', 'rita' ], [ $LONG, $LONG ], [ 'ex-ann', 'ann' ]) {
    my ($rc, $out) = persons('padmin', 'map', @$_);
    is($rc, 0, "mt5credit persons map $_->[0] $_->[1]") or diag $out;
}
my ($prc, $pout) = persons('padmin', 'unmap', 'ex-ann');
is($prc, 0, '... and unmap ex-ann (an account gone)') or diag $pout;
($prc, $pout) = persons('padmin', 'map', 'bot', 'bot');
is($prc, 1, 'a person admin cannot map a name to a role that is no person');
like($pout, qr/refused: "bot" is no person/, '... the database says why');
($prc, $pout) = persons('ann', 'map', 'mallory', 'ben');
is($prc, 1, 'a person who is no person admin cannot map a name');
like($sb->psql("SET ROLE carol; SELECT mt5credit.person_identity_map("
              . "'mallory', 'ann')", user => 'web', may_fail => 1, raw => 1),
     qr/never through a set role/, 'the console\'s credentials, as a '
     . 'person who is a person admin, cannot map a name to ann');
($prc, $pout) = persons('padmin', 'names');
like($pout, qr/^ann\@example\.com\s+ann\s+padmin\s/m,
     'mt5credit persons names: ann@example.com is ann, mapped by padmin');
unlike($pout, qr/^ex-ann/m, '... ex-ann is nobody');
is($sb->sql1("SELECT string_agg(identity || ':' || action || ':' || actor, "
             . "' ' ORDER BY id) FROM mt5credit.console_identity_history "
             . "WHERE identity = 'ex-ann'"),
   'ex-ann:map:padmin ex-ann:unmap:padmin', '... both kept, with who');
# a name that once was someone's, and the console's own login and a group,
# mapped behind the admin's back: still nobody
$sb->psql(<<'SQL');
INSERT INTO mt5credit.console_identity (identity, person)
SELECT r.rolname, r.oid FROM pg_roles r
WHERE r.rolname IN ('bot', 'mt5credit_operator', 'web');
SQL

my $credit = $st->pay(login => 70681, amount => 1200);
my $case = $st->failed_with_case($credit, 'trust-boundary-1');

# every statement PostgreSQL receives, with the program that sent it
$sb->psql(q{ALTER SYSTEM SET log_statement = 'all';
            ALTER SYSTEM SET log_line_prefix = '<%a> ';
            SELECT pg_reload_conf();});
sleep 0.5;
my $pglog = $sb->dir . '/pg.log';

sub pg_log_size { -s $pglog || 0 }

# the console's statements logged since a point, as text
sub console_statements {
    my ($from) = @_;
    open my $fh, '<', $pglog or die "$pglog: $!";
    seek $fh, $from, 0;
    my @lines = grep { /^<mt5credit-console> / } <$fh>;
    close $fh;
    return @lines;
}

# what every table of ours holds, to prove nothing changed
sub tables {
    return $sb->sql1(<<'SQL');
SELECT string_agg(c.relname || '=' || (xpath('/row/n/text()',
    query_to_xml(format('SELECT count(*) AS n FROM mt5credit.%I',
                        c.relname), false, true, '')))[1]::text, ','
    ORDER BY c.relname)
    || ' ' || (SELECT md5(string_agg(t::text, ',' ORDER BY t.id))
               FROM mt5credit.mt5_credit t)
    || ' ' || (SELECT md5(string_agg(t::text, ',' ORDER BY t.id))
               FROM mt5credit."case" t)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'mt5credit' AND c.relkind = 'r'
  AND c.relname NOT IN ('console_act_rate')
SQL
}

sub get {
    my ($who, $path, %opt) = @_;
    my @h = defined $who ? ([ 'Authorization', 'Basic '
                              . encode_base64("$who:pw", '') ]) : ();
    push @h, @{ $opt{headers} || [] };
    return $sb->http($opt{method} || 'GET', "/console/$path",
                     headers => \@h, body => $opt{body}, host => $opt{host});
}

sub token {
    my ($who, $window) = @_;
    $window //= int(time / 600);
    return substr(hmac_sha256_hex(pack('Q>', $window) . $who, sha256($KEY)),
                  0, 32);
}

# a money action carries its person's code (sql/065), from an app
# enrolled at first use
require Mt5Credit::Totp;
my $app = Mt5Credit::Totp->new(sb => $sb);
sub act {
    my ($who, $action, %opt) = @_;
    $action = $app->with_code($sb, $who, $action);
    my $token = exists $opt{token} ? $opt{token} : token($who);
    my @h = ([ 'Content-Type', $opt{type} || 'application/json' ]);
    push @h, [ 'Origin', $opt{origin} // 'https://desk.example.com' ]
        unless exists $opt{origin} && !defined $opt{origin};
    push @h, @{ $opt{headers} || [] };
    push @h, [ 'X-CSRF-Token', $token ] if defined $token;
    return get($who, 'api/act', method => 'POST', headers => \@h,
               body => $opt{raw} // $json->encode($action),
               host => $opt{host});
}

sub esc { uri_escape(@_) }

is(get('ann', 'api/whoami')->{status}, 200, 'the console answers ann');

# --- 1. the edge's refusals: no statement, nothing changed ----------------

# the reproduction of issue 29, item 1, and SQL in every argument of every
# endpoint, in the endpoint's name, under every method
my ($issue) = console_sql($case);
my %args = console_args();
my @refusals = map { [ $_->[0], 400, $_->[1] ] } console_attacks($case);
push @refusals, [ 'case', 400, 'case: no id' ],
                [ 'withdrawal', 400, 'withdrawal: no ref' ],
                [ 'search', 400, 'search: no q' ];
push @refusals, map { [ esc($_), 404, 'SQL as the endpoint' ] }
    'cases;SELECT 1', "case'||pg_sleep(1)||'", 'whoami;DROP TABLE x',
    '../../etc/passwd';
push @refusals, [ 'act', 404, 'GET api/act (actions are POSTs)' ];

my $before = tables();
my $mark = pg_log_size();
my $log_mark = $sb->error_log_size;
my %wrong;
for my $who ('ann', 'rita') {
    for my $r (@refusals) {
        my ($path, $want, $what) = @$r;
        my $got = get($who, "api/$path")->{status};
        $wrong{"$who $what ($path): $got"} = 1 unless $got == $want;
    }
    for my $method (qw(PUT DELETE PATCH OPTIONS)) {
        for my $endpoint (sort(keys %args), 'whoami', 'status', 'act') {
            my $got = get($who, "api/$endpoint?id=" . esc($issue),
                          method => $method, body => $issue)->{status};
            $wrong{"$who $method $endpoint: $got"} = 1 unless $got == 405;
        }
    }
    for my $endpoint (sort(keys %args), 'whoami', 'status') {
        # a POST anywhere but api/act is no endpoint
        my $got = get($who, "api/$endpoint", method => 'POST',
                   headers => [ [ 'Content-Type', 'application/json' ],
                                [ 'Origin', 'https://desk.example.com' ],
                                [ 'X-CSRF-Token', token($who) ] ],
                   body => '{}')->{status};
        $wrong{"$who POST $endpoint: $got"} = 1 unless $got == 404;
    }
}
is(join("\n", sort keys %wrong), '',
   scalar(@refusals) * 2 . ' refused reads, ' . 2 * 4 * 13 . ' wrong '
   . 'methods, ' . 2 * 12 . ' POSTs elsewhere: each its status');

# an action the edge refuses, with SQL in its body
my $note = { action => 'note', case => $case + 0, note => $issue };
my @posts = (
    [ act('ann', $note, token => undef), 403, 'no token' ],
    [ act('ann', $note, token => token('ben')), 403, "another's token" ],
    [ act('ann', $note, token => token('ann', int(time / 600) - 2)), 403,
      'a token two windows old' ],
    [ act('ann', $note, origin => 'https://evil.example'), 403,
      'another origin' ],
    [ act('ann', $note, origin => 'https://desk.example.com.evil.example'),
      403, 'an origin that only begins with ours' ],
    [ act('ann', $note, origin => 'http://evil.example', host =>
          'evil.example'), 403, 'an origin that matches the Host the client '
          . 'chose (the old check)' ],
    [ act('ann', $note, origin => undef), 403, 'no Origin, no Referer' ],
    [ act('ann', $note, origin => undef, headers => [ [ 'Referer',
          'https://desk.example.com.evil.example/console/' ] ]), 403,
      'a Referer of another origin' ],
    [ act('ann', $note, type => 'application/x-www-form-urlencoded'), 415,
      'a form' ],
    [ act('ann', undef, raw => "{\"note\":\"\x00\"}"), 400, 'a NUL byte' ],
    [ act('ann', undef, raw => "{\"note\":\"\xc3\x28\"}"), 400,
      'bytes that are not UTF-8' ],
    [ act('ann', undef, raw => '{"note":"' . ('x' x 70000) . '"}'), 413,
      'past 64 KiB' ],
);
for my $p (@posts) {
    is($p->[0]{status}, $p->[1], "an action: $p->[2]: $p->[1]");
}

# names the edge refuses: of no shape (a control character, too long)
for my $name ("ann\tx", 'a' x 256) {
    $sb->write_file('htpasswd', join '', map { "$_:$hash\n" } @names, $name);
    is(get($name, 'api/whoami')->{status}, 403,
       'a name of ' . length($name) . ' bytes with '
       . ($name =~ /\t/ ? 'a tab' : 'no control') . ': 403');
}
$sb->write_file('htpasswd', join '', map { "$_:$hash\n" } @names);

sleep 0.5;
my @leaked = console_statements($mark);
is(scalar @leaked, 0, 'PostgreSQL received no statement for any of them')
    or diag(join '', @leaked[0 .. ($#leaked < 20 ? $#leaked : 20)]);
is(tables(), $before, '... and no table changed');
is($st->status_of($credit), 'failed', '... the failed credit is still failed');
unlike($sb->error_log($log_mark), qr/header already sent/,
       '... and nginx never answered one twice ("header already sent")');

# --- 2. what does reach PostgreSQL: one fixed statement, values apart ----

$mark = pg_log_size();
my $r = get($QUOTE, 'api/whoami');
is($r->{status}, 403, 'the name with a quote and a statement in it: 403');
$r = act($QUOTE, $note);
is($r->{status}, 403, '... and its action: 403');
my @seen = console_statements($mark);
ok(@seen >= 2, 'those reached PostgreSQL only as the fixed statement:');
my $fixed = quotemeta 'SELECT mt5credit.console_call($1, $2, $3, $4, $5, '
          . '$6, $7)';
is(join('', grep { /LOG:  (?:statement|execute)/ && !/execute <unnamed>: $fixed$/ }
        @seen), '', '... "SELECT mt5credit.console_call($1 .. $7)", the '
   . 'name a parameter')
    or diag(join '', @seen);
is(tables(), $before, '... nothing changed: no note as ann');

# the reader's GET of issue 29 and actions with SQL in every field, as
# people who may read: parameters, refused or stored as text
is(get('rita', 'api/case?id=' . esc($issue))->{status}, 400,
   'rita\'s GET of the reproduction: 400');
$r = act('rita', { action => 'propose', case => $case + 0,
                   proposal_action => 'requeue_credit', note => $issue });
is($r->{status}, 403, 'rita\'s action, SQL in its note: refused by her '
   . 'grants (403)');
$r = act('ann', { action => $issue, case => $case + 0 });
is($r->{status}, 409, 'an action named by SQL: no such action (409)');
is(tables(), $before, '... nothing changed');
is($sb->sql1("SELECT count(*) FROM mt5credit.money_proposal"), 0,
   'no proposal by anyone');
is($st->status_of($credit), 'failed', 'and the credit was not re-queued');

# --- 4. every endpoint, every kind of name ------------------------------

my %reads = (whoami => '', cases => '', case => "?id=$case",
             events => '', event => '?id=1', withdrawals => '',
             withdrawal => '?ref=wd_1', search => '?q=x', recon_runs => '',
             recon_run => '?id=1', recon_report => '?id=1', status => '');
my %matrix;
for my $name ('bot', 'mt5credit_operator', 'web', 'mallory', "${LONG}x") {
    for my $e (sort keys %reads) {
        $matrix{"$name $e"} = get($name, "api/$e$reads{$e}")->{status};
    }
    $matrix{"$name act"} = act($name, $note)->{status};
}
is(join(' ', grep { $matrix{$_} != 403 } sort keys %matrix), '',
   'a role that is no person, a group role, the console\'s login, a name '
   . 'nobody has and a 64-byte name whose first 63 are a person\'s: 403 on '
   . 'every endpoint (' . scalar(keys %matrix) . ' tries)');
my (%op, %reader);
for my $e (sort keys %reads) {
    $op{$e} = get('ann', "api/$e$reads{$e}")->{status};
    $reader{$e} = get('rita', "api/$e$reads{$e}")->{status};
}
is(join(' ', map { "$_:$op{$_}" } grep { $op{$_} !~ /^(?:200|404)$/ }
        sort keys %op), '', 'ann, a person who acts: every endpoint '
   . 'answers her (200, or 404 for an id nobody has)');
is(join(' ', map { "$_:$reader{$_}" } grep { $reader{$_} !~ /^(?:200|404)$/ }
        sort keys %reader), 'case:403', 'rita, a person who reads: every '
   . 'endpoint but the desk\'s case page answers her');
is(get('ann', "api/case?id=$case")->{status}, 200,
   'ann (an operator) opens the case');
is(get('rita', 'api/cases')->{status}, 200, 'rita (a reader) reads the queue');
is(get('rita', "api/case?id=$case")->{status}, 403,
   '... but not a case: the desk\'s');
is(get($LONG, 'api/cases')->{status}, 200,
   'the 63-byte name is its own person, and reads');

# --- 5. one human, one person ----------------------------------------------

$r = act('ann@example.com', { action => 'propose', case => $case + 0,
                              proposal_action => 'requeue_credit',
                              note => 'enabled' });
is($r->{status}, 200, 'ann, by her SSO name, proposes a re-queue')
    or diag $r->{body};
my $proposal = $json->decode($r->{body})->{id};
is($json->decode($r->{body})->{by}, 'ann', '... recorded as ann');
$r = act('ann', { action => 'approve', proposal => $proposal, note => 'me' });
is($r->{status}, 409, '... and by her other name cannot approve it');
like($json->decode($r->{body})->{detail},
     qr/^two-person rule: ann proposed this and cannot approve it; /,
     '... the two-person rule, in words (not "cannot approves it"): one '
     . 'human is one person');
is($st->status_of($credit), 'failed', '... nothing moved');

# --- 7. smaller doors -------------------------------------------------------

is(act('ann', undef, raw => '{"action":"note","case":' . $case
                          . ',"note":"\u0000"}')->{status}, 400,
   'an action with \u0000: 400, not 500');
is(act('ann', undef, raw => '{"action":"note","case":' . $case
                          . ',"note":"\ud800"}')->{status}, 400,
   '... with a lone surrogate: 400');
is(act('ann', { action => 'note', case => $case + 0, note => 'ok' },
       token => token('ann', int(time / 600) - 1))->{status}, 200,
   'a token of the previous window is still taken');
is(act('ann', { action => 'note', case => $case + 0, note => 'ok' },
       origin => undef, headers => [ [ 'Referer',
       'https://desk.example.com/console/' ] ])->{status}, 200,
   'a Referer of the configured origin, without Origin, is taken');
is(get('rita', 'api/search?q=' . esc('ann@example.com'))->{status}, 200,
   'search for a value with "@", as the page encodes it: 200');
is(get('rita', 'api/search?q=' . esc('pi:1'))->{status}, 200,
   '... and with ":"');
$sb->psql("UPDATE mt5credit.case SET assigned_to = 'ann\@example.com' "
          . "WHERE id = $case");
is(join(',', map { $_->{id} } @{ $json->decode(
       get('ann', 'api/cases?owner=' . esc('ann@example.com'))->{body}) }),
   $case, 'the owner filter with "@": finds the case');

# one person's actions, whichever name and host they come from
my %seen;
for my $i (1 .. 70) {
    my $name = $i % 2 ? 'ann' : 'ann@example.com';
    $seen{ act($name, { action => 'note', case => $case + 0,
                        note => "n$i" })->{status} }++;
}
ok($seen{429} && $seen{429} >= 10, 'past 60 actions a minute, by either '
   . 'of her names: 429 (' . ($seen{429} // 0) . ' of 70)')
    or diag explain \%seen;
is($sb->sql1("SELECT actions FROM mt5credit.console_act_rate "
             . "WHERE person = 'ann'"), 60,
   '... counted for the person, in the database every host shares');
is(get('ann', 'api/whoami')->{status}, 200, '... reading goes on');

# --- memory and logs ----------------------------------------------------------

unlike($sb->error_log, qr/header already sent/,
       'nginx never logged "header already sent"');
is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');
SKIP: {
    skip 'valgrind not installed', 2 unless $VALGRIND;
    is($sb->stop_nginx, 0, 'nginx stops cleanly under valgrind');
    open my $fh, '<', $vglog or die "$vglog: $!";
    my $report = do { local $/; <$fh> };
    like($report, qr/ERROR SUMMARY: 0 errors/,
         'valgrind over every console path: 0 errors') or diag($report);
}

done_testing;
