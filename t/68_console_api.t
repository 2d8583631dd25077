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
#   - an action without the person's token, from another origin, as a
#     form (what a cross-site page can send), too large, not UTF-8 text:
#     refused before the database sees it
#   - one person approving their own proposal through the console, or a
#     reader acting: the database refuses, and says why (409, 403)
#   - a note's markup or dollar quotes changing anything: stored as text
#   - a burst of actions from one person (limit_req on POSTs): 429, while
#     reading goes on
#   - a withdrawal approved by the person who prepared it, or with another
#     digest than the one prepared (and shown to the approver)
#   - a reader pausing crediting; a pause without who and why
#   - a console location without its pool, said only at the first
#     request: nginx -t names the file and line

use strict;
use warnings;

use JSON::PP;
use Digest::SHA qw(hmac_sha256_hex sha256);
use File::Temp qw(tempdir);
use MIME::Base64 qw(encode_base64);
use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::ConsoleAttack qw(console_attacks);
use Mt5Credit::Stack;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $json = JSON::PP->new;

# the key every host serving the console shares (mt5_credit_console_key_file)
my $keydir = tempdir('mt5credit-key-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $KEY = 'a console key of forty-eight bytes, shared by all';
open my $kf, '>', "$keydir/console.key" or die $!;
print $kf "$KEY\n";
close $kf;

my $st = Mt5Credit::Stack->new(
    nginx_http => 'mt5_credit_console_postgres "host=127.0.0.1 '
                . 'port=%%PGPORT%% dbname=mt5credit user=web";'
                . "mt5_credit_console_key_file $keydir/console.key;"
                # actions limited per person, as the shipped example does
                . 'map $request_method $console_action {
                       POST $remote_user; default ""; }
                   limit_req_zone $console_action zone=console:1m rate=5r/s;',
    locations => "location /console/ {
            auth_basic \"mt5-credit\";
            auth_basic_user_file %%DIR%%/htpasswd;
            mt5_credit_console;
            mt5_credit_console_person \$remote_user;
            mt5_credit_console_origin http://localhost;
            limit_req zone=console burst=100 nodelay;
            limit_req_status 429;
            alias $ROOT/ngx_mt5_credit_module/console/;
            # with nosniff, a script or a style sheet of another type is
            # refused by the browser (Debian's nginx.conf includes
            # mime.types at http level; these are the three the pages use)
            types { text/html html; text/css css;
                    application/javascript js; }
        }");
my $sb = $st->sb;
$st->account(login => 70681);

my $hash = `openssl passwd -apr1 -salt mt5cred pw`;
chomp $hash;
$sb->write_file('htpasswd', join '', map { "$_:$hash\n" }
                qw(ann ben rita bot mallory));

$sb->psql(<<'SQL');
CREATE ROLE ann  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE ben  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE rita NOLOGIN IN ROLE mt5credit_reader, mt5credit_person;
CREATE ROLE bot  NOLOGIN IN ROLE mt5credit_operator;
CREATE ROLE web  LOGIN NOINHERIT IN ROLE mt5credit_console;
GRANT ann, ben, rita, bot TO web;
-- the names nginx gives, each mapped to its person (sql/063)
SELECT mt5credit.person_identity_map(p, p) FROM unnest(ARRAY['ann', 'ben',
    'rita']) p;
INSERT INTO mt5credit.console_identity (identity, person)
SELECT 'bot', oid FROM pg_roles WHERE rolname = 'bot';
SQL

my $credit = $st->pay(login => 70681, amount => 1200);
my $case = $st->failed_with_case($credit, 'console-api-1');

sub get {
    my ($who, $path, %opt) = @_;
    my @h = $who ? ([ 'Authorization', 'Basic '
                      . encode_base64("$who:pw", '') ]) : ();
    push @h, @{ $opt{headers} || [] };
    return $sb->http($opt{method} || 'GET', "/console/$path",
                     headers => \@h, body => $opt{body});
}

# an action as the console's page sends it: JSON, this origin, the token,
# and for a money action the person's code (sql/065; t/70 proves what a
# missing, wrong or used one does), from an app enrolled at first use
require Mt5Credit::Totp;
my $app = Mt5Credit::Totp->new(sb => $sb);
sub act {
    my ($who, $action, %opt) = @_;
    $action = $app->with_code($sb, $who, $action);
    my $token = exists $opt{token} ? $opt{token}
              : $json->decode(get($who, 'api/whoami')->{body})->{csrf};
    my @h = ([ 'Content-Type', $opt{type} || 'application/json' ],
             [ 'Origin', $opt{origin} || 'http://localhost' ]);
    push @h, [ 'X-CSRF-Token', $token ] if defined $token;
    return get($who, 'api/act', method => 'POST', headers => \@h,
               body => $opt{raw} // $json->encode($action));
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
my $w = $json->decode($r->{body});
delete $w->{csrf};
is_deeply($w, { person => 'ann', act => JSON::PP::true,
                read => JSON::PP::true,
                second_factor => JSON::PP::false }, '... ann, who may act');
like($r->{headers}{'content-type'}, qr{^application/json}, '... JSON');
is($r->{headers}{'cache-control'}, 'no-store', '... never kept');
like($r->{headers}{'content-security-policy'}, qr/default-src 'none'/,
     '... under the policy');

$r = get('rita', 'api/whoami');
$w = $json->decode($r->{body});
delete $w->{csrf};
is_deeply($w, { person => 'rita', act => JSON::PP::false,
                read => JSON::PP::true,
                second_factor => JSON::PP::false }, 'rita: may read, not act');

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
is($r->{headers}{allow}, 'GET, HEAD, POST', '... saying what is allowed');
is(get('ann', 'api/whoami', method => 'POST')->{status}, 404,
   'POST to a reading endpoint: 404 (actions are api/act)');
is($sb->sql1("SELECT count(*) FROM mt5credit.case"), 1, 'nothing changed');

# every endpoint with SQL in every argument (issue 29: on 2645cbf a
# reader's refused GET carried its argument into PostgreSQL as SQL, and
# this test saw only the 400); t/75 counts the statements PostgreSQL got
my $log_mark = $sb->error_log_size;
my @attacks = console_attacks($case);
my %odd;
for my $who (qw(ann rita)) {
    for my $a (@attacks) {
        my $got = get($who, "api/$a->[0]")->{status};
        $odd{"$who $a->[1]: $got"} = 1 unless $got == 400;
    }
}
is(join("\n", sort keys %odd), '', 'SQL in every argument of every endpoint, '
   . 'encoded and raw, as an operator and a reader: 400 each ('
   . 2 * @attacks . ')');
is($sb->sql1("SELECT count(*) FROM mt5credit.money_proposal"), 0,
   '... no proposal by anyone');
is($st->status_of($credit), 'failed', '... the credit still failed');
unlike($sb->error_log($log_mark), qr/header already sent/,
       '... and each answered once (no "header already sent")');

my @refused = grep { /console: refused \(/ } split /\n/, $sb->error_log;
ok(@refused >= 2, 'each refusal is logged with the database\'s reason');

# --- actions ------------------------------------------------------------------

my $me = $json->decode(get('ann', 'api/whoami')->{body});
like($me->{csrf}, qr/^[0-9a-f]{32}$/, 'api/whoami gives the token actions carry');
is($me->{csrf}, substr(hmac_sha256_hex(pack('Q>', int(time() / 600)) . 'ann',
                                       sha256($KEY)), 0, 32),
   '... HMAC-SHA256 of the ten-minute window and the person under the key '
   . 'file\'s SHA-256: any host with the file makes the same');
isnt($json->decode(get('ben', 'api/whoami')->{body})->{csrf}, $me->{csrf},
     '... each person their own');

my $assign = { action => 'assign', case => $case + 0, to => 'ann',
               note => 'mine' };
$r = act('ann', $assign, token => undef);
is($r->{status}, 403, 'an action without the token: 403');
is($json->decode($r->{body})->{error}, 'csrf', '... csrf');
is(act('ben', $assign, token => $me->{csrf})->{status}, 403,
   '... and with another person\'s token: 403');
$r = act('ann', $assign, origin => 'https://evil.example');
is($r->{status}, 403, 'an action from another origin: 403');
is($json->decode($r->{body})->{error}, 'cross_origin', '... cross_origin');
is(act('ann', $assign, origin => 'http://localhost.evil.example')->{status},
   403, '... also one whose name only begins with ours');
is(act('ann', $assign, type => 'application/x-www-form-urlencoded')->{status},
   415, 'a form post (what a cross-site page can send): 415');
is($sb->sql1("SELECT status FROM mt5credit.case WHERE id = $case"), 'open',
   '... none of them changed the case');

$r = act('ann', $assign);
is($r->{status}, 200, 'ann assigns the case to herself') or diag $r->{body};
is($json->decode($r->{body})->{by}, 'ann', '... as ann');
is($sb->sql1("SELECT status || ':' || assigned_to FROM mt5credit.case "
             . "WHERE id = $case"), 'assigned:ann', '... assigned');
is($sb->sql1("SELECT actor FROM mt5credit.case_action WHERE case_id = $case "
             . "ORDER BY id DESC LIMIT 1"), 'ann', '... recorded as ann');

my $planted = '<script>document.title="owned"</script><img src=x onerror=alert(1)> $$; $mc$ DROP';
$r = act('ann', { action => 'note', case => $case + 0, note => $planted });
is($r->{status}, 200, 'a note with markup and dollar quotes in it');
is($sb->sql1("SELECT note FROM mt5credit.case_action WHERE case_id = $case "
             . "ORDER BY id DESC LIMIT 1"), $planted, '... stored as it was written');

$r = act('ann', { action => 'propose', case => $case + 0,
                  proposal_action => 'requeue_credit',
                  note => 'the account was enabled',
                  evidence => [ 'ticket OPS-9' ] });
is($r->{status}, 200, 'ann proposes to re-queue the credit') or diag $r->{body};
my $proposal = $json->decode($r->{body})->{id};
ok($proposal, '... proposal ' . ($proposal // '?'));

$r = act('ann', { action => 'approve', proposal => $proposal, note => 'me' });
is($r->{status}, 409, 'ann cannot approve her own: 409');
like($json->decode($r->{body})->{detail}, qr/two-person rule/,
     '... the database says why');
is($st->status_of($credit), 'failed', '... nothing moved');
is(act('rita', { action => 'approve', proposal => $proposal, note => 'x' })
   ->{status}, 403, 'rita (a reader) cannot approve: 403');

$r = act('ben', { action => 'approve', proposal => $proposal,
                  note => 'checked' });
is($r->{status}, 200, 'ben approves') or diag $r->{body};
is($st->status_of($credit), 'pending', '... the credit is re-queued');
is($sb->sql1("SELECT decided_by FROM mt5credit.money_proposal WHERE id = "
             . "$proposal"), 'ben', '... recorded as ben');

is(act('ann', undef, raw => 'not json')->{status}, 400,
   'a body that is not JSON: 400');
is(act('ann', { action => 'assign', case => 'twelve' })->{status}, 400,
   'a case that is not a number: 400');
$r = act('ann', { action => 'dance' });
is($r->{status}, 409, 'an action that does not exist: refused');
like($json->decode($r->{body})->{detail}, qr/no action "dance"/, '... by name');
is(act('ann', undef, raw => "{\"action\":\"note\",\"note\":\"\x00\"}")
   ->{status}, 400, 'a body with a NUL byte: 400');
is(act('ann', undef, raw => '{"note":"' . ('x' x 70000) . '"}')->{status},
   413, 'a body past 64 KiB: 413');

# --- a correcting credit: an exact amount, from text ---------------------------------

$r = act('ann', { action => 'propose', case => $case + 0,
                  proposal_action => 'correcting_credit', amount => '1.25',
                  note => 'x' });
is($r->{status}, 409, 'a correction of a credit that is not done: refused');
like($json->decode($r->{body})->{detail}, qr/settle this one first/, '... saying why');
$sb->psql("SET session_replication_role = replica; UPDATE mt5credit.mt5_credit "
          . "SET status = 'done', mt5_deal_ticket = 77001 WHERE id = $credit");
$sb->psql("UPDATE mt5credit.case SET status = 'assigned' WHERE id = $case");
$r = act('ann', { action => 'propose', case => $case + 0,
                  proposal_action => 'correcting_credit',
                  amount => '12345678.12', note => 'the fee was refunded',
                  evidence => [ 'statement line 7' ] });
is($r->{status}, 200, 'a correcting credit of 12345678.12 proposed') or diag $r->{body};
is($sb->sql1("SELECT amount_minor || ' ' || currency || ' ' || evidence::text "
             . "FROM mt5credit.money_proposal WHERE id = "
             . $json->decode($r->{body})->{id}),
   '1234567812 USD ["statement line 7"]',
   '... stored as 1234567812 minor units, exactly, with its evidence');
is(act('ann', { action => 'withdraw', proposal => $json->decode($r->{body})->{id},
                note => 'not now' })->{status}, 200, '... and withdrawn');

# --- withdrawals: prepared by one, approved by another with the digest ---------

my $wd = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
    . "'alice', 'console-wd-1', 'stripe', 'live1', 70681, 700, 'USD', "
    . "'ba_console_dest')", user => 'portal');
like($wd, qr/^wd_\d+$/, "a withdrawal requested ($wd)");
$r = get('ann', 'api/withdrawals');
is($r->{status}, 200, 'api/withdrawals');
is_deeply([ map { $_->{reference} } @{ $json->decode($r->{body}) } ], [ $wd ],
          '... the queue holds it');
is($json->decode(get('ann', "api/withdrawal?ref=$wd")->{body})->{status},
   'requested', 'api/withdrawal: requested');
is(get('ann', "api/withdrawal?ref=wd%27x")->{status}, 400,
   '... a reference with a quote: 400');

$r = act('ann', { action => 'withdrawal_prepare', withdrawal => $wd,
                  note => 'checked the client' });
is($r->{status}, 200, 'ann prepares it') or diag $r->{body};
my $digest = $json->decode($r->{body})->{digest};
like($digest, qr/^[0-9a-f]{32}$/, '... and gets the digest to approve with');
my $shown = $json->decode(get('ben', "api/withdrawal?ref=$wd")->{body});
is($shown->{prepared_digest}, $digest, '... the digest the approver is shown');
is($shown->{prepared_by}, 'ann', '... prepared by ann');

$r = act('ann', { action => 'withdrawal_approve', withdrawal => $wd,
                  digest => $digest, note => 'me' });
is($r->{status}, 409, 'ann cannot approve what she prepared: 409');
is(act('ben', { action => 'withdrawal_approve', withdrawal => $wd,
                digest => '0' x 64, note => 'x' })->{status}, 409,
   'ben cannot approve another digest than the one prepared');
is(act('rita', { action => 'withdrawal_approve', withdrawal => $wd,
                 digest => $digest, note => 'x' })->{status}, 403,
   'rita cannot approve');
$r = act('ben', { action => 'withdrawal_approve', withdrawal => $wd,
                  digest => $digest, note => 'ok' });
is($r->{status}, 200, 'ben approves it with the digest') or diag $r->{body};
is($sb->sql1("SELECT status || ' ' || prepared_by || ' ' || approved_by "
             . "FROM mt5credit.withdrawal WHERE reference = '$wd'"),
   'approved ann ben', '... approved, by two people');

# --- a risk hold: released by two people through the console (sql/079) ------------

{
    my $c = $sb->sql1("SELECT mt5credit.risk_rule_propose('credit_amount', "
                      . "'USD', NULL, '1000.00', false, 'large cards')");
    $sb->sql1("SET ROLE ann; SELECT mt5credit.risk_rule_decide($c, "
              . "'approve', 'ok')");
}
my $held = $st->pay(login => 70681, amount => 200000);
is($st->status_of($held), 'held', 'a credit over a risk rule\'s limit is held');
my $hcase = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = $held "
                      . "AND kind = 'risk_hold'");
$r = act('ann', { action => 'propose', case => $hcase + 0,
                  proposal_action => 'release_hold',
                  note => 'the client sent the card statement' });
is($r->{status}, 200, 'ann proposes its release in the console')
    or diag $r->{body};
my $hp = $json->decode($r->{body})->{id};
is(act('ann', { action => 'approve', proposal => $hp, note => 'me' })
   ->{status}, 409, 'ann cannot approve her own release: 409');
is($st->status_of($held), 'held', '... the credit is still held');
$r = act('ben', { action => 'approve', proposal => $hp, note => 'seen' });
is($r->{status}, 200, 'ben approves it') or diag $r->{body};
is($st->status_of($held), 'pending', '... and the credit is queued for MT5');
$r = act('ben', { action => 'resolve', case => $hcase + 0,
                  resolution => 'accepted', note => 'released' });
is($r->{status}, 200, '... and resolves the hold\'s case') or diag $r->{body};
like(get('ann', '')->{body}, qr/id="propose-release"/,
     'the page has the release and return buttons');

# --- a withdrawal's hold: returned by two people through the console (080) --------

{
    my $c = $sb->sql1("SELECT mt5credit.risk_rule_propose('withdrawal_amount', "
                      . "'USD', NULL, '1000.00', false, 'large withdrawals')");
    $sb->sql1("SET ROLE ann; SELECT mt5credit.risk_rule_decide($c, "
              . "'approve', 'ok')");
}
$st->account(login => 70689, balance => '5000.00');
my $hwd = $sb->sql1("SELECT reference FROM "
    . "mt5credit.withdrawal_request('alice', 'console-wd-held', 'stripe', "
    . "'live1', 70689, 300000, 'USD', 'ba_console_dest')", user => 'portal');
is($sb->sql1("SELECT status FROM mt5credit.withdrawal WHERE reference = "
             . "'$hwd'"), 'held',
   'a withdrawal over the rule\'s limit is held (the portal is not told)');
my $wcase = $sb->sql1("SELECT id FROM mt5credit.case WHERE kind = "
                      . "'withdrawal_hold' AND details->'withdrawal'->>"
                      . "'reference' = '$hwd'");
$r = act('ann', { action => 'propose', case => $wcase + 0,
                  proposal_action => 'return_hold',
                  note => 'the destination is not the client\'s' });
is($r->{status}, 200, 'ann proposes to return it in the console')
    or diag $r->{body};
$hp = $json->decode($r->{body})->{id};
is(act('ann', { action => 'approve', proposal => $hp, note => 'me' })
   ->{status}, 409, 'ann cannot approve her own return: 409');
$r = act('ben', { action => 'approve', proposal => $hp, note => 'agreed' });
is($r->{status}, 200, 'ben approves it') or diag $r->{body};
is($sb->sql1("SELECT status || ' ' || decided_by FROM mt5credit.withdrawal "
             . "WHERE reference = '$hwd'"), 'rejected ben',
   '... the withdrawal is rejected, decided by ben');
$r = act('ben', { action => 'resolve', case => $wcase + 0,
                  resolution => 'not_money', note => 'returned' });
is($r->{status}, 200, '... and resolves the hold\'s case') or diag $r->{body};

# --- search -----------------------------------------------------------------------

my $dep = $sb->sql1("SELECT d.reference FROM mt5credit.deposit d JOIN "
                    . "mt5credit.mt5_credit c ON c.deposit_id = d.id "
                    . "WHERE c.id = $credit");
my $found = $json->decode(get('rita', "api/search?q=$dep")->{body});
is_deeply([ map { $_->{reference} } @{ $found->{deposits} } ], [ $dep ],
          "api/search by the deposit's reference finds it (as a reader)");
is_deeply([ map { $_->{id} } @{ $found->{credits} } ], [ $credit ],
          '... and its credit');
$found = $json->decode(get('ann', 'api/search?q=70681')->{body});
ok((grep { $_->{id} == $credit } @{ $found->{credits} }),
   '... by the MT5 login too');
is_deeply([ map { $_->{reference} } @{ $found->{withdrawals} } ], [ $wd ],
          '... with the login\'s withdrawal');
is(get('ann', "api/search?q=x%27y")->{status}, 400, '... a quote: 400');
is_deeply($json->decode(get('ann', 'api/search?q=nobody')->{body}),
          { deposits => [], credits => [], withdrawals => [] },
          '... nothing for a name nobody has');

# --- status and the kill switch -------------------------------------------------

my $status = $json->decode(get('rita', 'api/status')->{body});
ok((grep { $_->{metric} eq 'credits' } @{ $status->{work} }),
   'api/status: the work, for a reader too');
is_deeply($status->{pauses}, [], '... nothing paused');
is(act('rita', { action => 'pause', scope => 'server', target => 'live1',
                 reason => 'x' })->{status}, 403, 'rita cannot pause');
$r = act('ann', { action => 'pause', scope => 'server', target => 'live1',
                  reason => 'MT5 maintenance' });
is($r->{status}, 200, 'ann pauses live1') or diag $r->{body};
$status = $json->decode(get('rita', 'api/status')->{body});
is(join(' ', map { "$_->{scope} $_->{target} $_->{paused_by}: $_->{reason}" }
        @{ $status->{pauses} }), 'server live1 ann: MT5 maintenance',
   '... shown with who and why');
is(act('ann', { action => 'resume', scope => 'server', target => 'live1',
                note => 'done' })->{status}, 200, '... and resumes it');
is_deeply($json->decode(get('ann', 'api/status')->{body})->{pauses}, [],
          '... nothing paused again');

# a backfill from further back, for the next run of mt5credit backfill
is(act('rita', { action => 'backfill', provider => 'stripe',
                 since => '2026-11-30T08:00:00Z', reason => 'x' })->{status},
   403, 'rita cannot ask for a backfill');
my $since = $sb->sql1("SELECT to_char((now() - interval '2 hours') AT TIME "
                      . "ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')");
$r = act('ann', { action => 'backfill', provider => 'stripe', since => $since,
                  reason => 'Stripe could not reach us' });
is($r->{status}, 200, 'ann asks for one from two hours back') or diag $r->{body};
is(join(' ', map { "$_->{provider} $_->{requested_by}: $_->{reason}" }
        @{ $json->decode(get('rita', 'api/status')->{body})->{backfills} }),
   'stripe ann: Stripe could not reach us',
   '... the status page shows it, waiting for the next run (t/73 runs it)');
is(act('ann', { action => 'backfill', provider => 'stripe',
                since => 'yesterday-ish', reason => 'x' })->{status}, 400,
   '... a time that is not one: 400');

# --- reconciliation: the runs and their findings ----------------------------------

# a finished run with one break, as the job leaves it (a fixture: the job
# itself is t/60's)
my $run = $sb->sql1(<<"SQL");
INSERT INTO mt5credit.recon_run (provider, business_day, time_zone, currency,
    window_start, window_end, deal_window_end, settlement_format,
    settlement_sha256, input_digest, verdict, finished_at)
VALUES ('stripe', '2026-11-30', 'UTC', 'USD', '2026-11-30', '2026-12-01',
    '2026-12-02', 'stripe', repeat('a', 64), 'fixture', 'breaks', now())
RETURNING id
SQL
$sb->psql(<<"SQL");
INSERT INTO mt5credit.recon_count VALUES ($run, 'summary', 'matched', 41),
    ($run, 'summary', 'mismatched', 1);
INSERT INTO mt5credit.recon_item (run_id, kind, item_key, severity, movement,
    amount_minor, currency, settlement, credit, case_id)
VALUES ($run, 'settled_not_credited', 'pi_console', 'high', 'payment', 1200,
    'USD', '{"row": 7, "note": "<b>bold</b>"}', NULL, $case);
SQL
$r = get('rita', 'api/recon_runs');
is($r->{status}, 200, 'api/recon_runs, for a reader');
my $runs = $json->decode($r->{body});
is("$runs->[0]{id} $runs->[0]{business_day} $runs->[0]{verdict}",
   "$run 2026-11-30 breaks", '... the run, its day and verdict');
is_deeply($runs->[0]{counts}, { matched => 41, mismatched => 1 },
          '... with its counts');
is(scalar @{ $json->decode(get('rita', 'api/recon_runs?provider=bank')->{body}) },
   0, '... filtered by provider');
my $one = $json->decode(get('rita', "api/recon_run?id=$run")->{body});
is(join(' ', map { "$_->{kind} $_->{item_key}" } @{ $one->{items} }),
   'settled_not_credited pi_console', 'api/recon_run: its findings');
is($one->{items}[0]{settlement}{note}, '<b>bold</b>',
   '... each with its settlement record, as data');
is(get('rita', 'api/recon_run?id=999999')->{status}, 404, '... no such run: 404');

# its HTML report, as the job keeps it (sql/058; t/60 stores a real one)
my $report = "<!doctype html><title>run $run</title><style>p{}</style><p>report</p>";
$sb->psql("SELECT mt5credit.recon_report_store($run, \$\$$report\$\$)");
$r = get('rita', "api/recon_report?id=$run");
is($r->{status}, 200, 'api/recon_report: the run\'s HTML report');
is($r->{body}, $report, '... its bytes as the job wrote them');
like($r->{headers}{'content-disposition'}, qr/^attachment;/,
     '... handed over as a file, never rendered in the console\'s origin');
like($r->{headers}{'content-type'}, qr{^text/html}, '... of its type');
is(get('rita', 'api/recon_report?id=999999')->{status}, 404, '... no report: 404');

# --- the queue's filters -----------------------------------------------------------

sub ids { join ',', map { $_->{id} } @{ $json->decode(get('ann', "api/cases?$_[0]")->{body}) } }
is(ids('severity=high'), $case, 'the queue by severity: high has the case');
is(ids('severity=low'), '', '... low has none');
is(ids('owner=ann'), $case, '... by owner: ann\'s');
is(ids('owner=ben'), '', '... not ben\'s');
is(ids('age=100000'), '', '... older than 100,000 minutes: none');
is(ids('age=0'), $case, '... older than 0: it');
is(get('ann', 'api/cases?age=1h')->{status}, 400, '... an age that is not minutes: 400');

# --- stored events, and their replay -----------------------------------------------

my $events = $json->decode(get('rita', "api/events?deposit=$dep")->{body});
is(scalar @$events, 1, "api/events by deposit: the payment's event (as a reader)");
my $ev = $events->[0]{id};
my $shown_ev = $json->decode(get('rita', "api/event?id=$ev")->{body});
like($shown_ev->{raw_body}, qr/\Q$dep\E/, 'api/event: the bytes as received');
like($shown_ev->{request_id}, qr/^[0-9a-f]{32}$/, '... with the edge\'s request id');
is(scalar @{ $json->decode(get('rita', "api/events?request_id=$shown_ev->{request_id}")->{body}) },
   1, 'api/events by that request id finds it');
is(get('rita', 'api/events?request_id=xyz')->{status}, 400, '... a request id of another shape: 400');
is(act('rita', { action => 'event_replay', event => $ev, reason => 'x' })->{status},
   403, 'rita cannot replay');
$r = act('ann', { action => 'event_replay', event => $ev,
                  reason => 'checking the console' });
is($r->{status}, 200, 'ann replays it') or diag $r->{body};
is($json->decode($r->{body})->{outcome}, 'already_credited',
   '... already credited: never a second credit');
is($sb->sql1("SELECT replayed_by || ': ' || reason FROM "
             . "mt5credit.webhook_event_replay WHERE event_id = $ev"),
   'ann: checking the console', '... recorded with who and why');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE deposit_id = "
             . "(SELECT deposit_id FROM mt5credit.mt5_credit WHERE id = $credit)"),
   1, '... and the deposit has its one credit');

# --- outbound events (sql/096) ---------------------------------------------------

my $outbound = $json->decode(get('rita', 'api/outbound')->{body});
ok(scalar(grep { $_->{type} eq 'case.opened' } @$outbound),
   'api/outbound: the events the broker\'s systems are sent (as a reader)');
my $msg = $outbound->[0]{webhook_id};
like(get('rita', "api/outbound_message?id=$msg")->{body},
     qr/"body":/, 'api/outbound_message: one, with its body as sent');
is(get('rita', "api/outbound_message?id=msg'x")->{status}, 400,
   '... a webhook-id of another shape: 400');
is(act('rita', { action => 'outbound_replay', webhook_id => $msg,
                 reason => 'x' })->{status}, 403, 'rita cannot send it again');
$sb->psql("INSERT INTO mt5credit.outbound_endpoint (name, registered_by) "
          . "VALUES ('crm', 'test')");
$r = act('ann', { action => 'outbound_replay_since',
                  since => '2000-01-01T00:00:00Z', endpoint => 'crm',
                  reason => 'a new CRM' });
is($r->{status}, 200, 'ann sends every event since a time to an endpoint')
    or diag $r->{body};
is($json->decode($r->{body})->{id},
   $sb->sql1('SELECT count(*) FROM mt5credit.outbound_message'),
   '... every one of them');
$r = act('ann', { action => 'outbound_replay', webhook_id => $msg,
                  reason => 'the CRM asked' });
is($json->decode($r->{body})->{id}, 1, 'ann sends one again: one delivery');
is($sb->sql1("SELECT string_agg(replayed_by || ': ' || reason, ', ' "
             . "ORDER BY id) FROM mt5credit.outbound_replay"),
   'ann: a new CRM, ann: the CRM asked', '... recorded with who and why');
is(act('ann', { action => 'outbound_replay', webhook_id => $msg })->{status},
   409, '... not without a reason');
is($json->decode(act('ann', { action => 'outbound_enable', endpoint => 'crm',
                              reason => 'x' })->{body})->{outcome},
   'not_disabled', 'enabling an endpoint that is not disabled: said so');

# a burst of actions is limited per person; reading is not.  The bucket
# (5 a second, 100 in a burst) is large enough for every action above,
# however fast they came (on a fast machine, 23 in well under a second
# used up a bucket of 20), and 160 at once are more than it holds
my %seen;
for (1 .. 160) {
    $seen{ act('ann', { action => 'note', case => $case + 0,
                        note => "burst $_" }, token => $me->{csrf})->{status} }++;
}
ok($seen{429}, "a burst of 160 actions: some refused with 429 "
   . "(" . ($seen{429} // 0) . ')');
ok($seen{200}, '... the first ones made (' . ($seen{200} // 0) . ')')
    or diag explain \%seen;
my %reads;
$reads{ get('ann', 'api/whoami')->{status} }++ for 1 .. 40;
is_deeply(\%reads, { 200 => 40 }, '... while reading is never limited');

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
    mt5_credit_console_postgres "host=127.0.0.1 dbname=mt5credit user=web";
    server {
        listen 127.0.0.1:%%PORT%%;
        location /both/ { mt5_credit_status; mt5_credit_console; }
        location /other/ { mt5_credit_console; mt5_credit_status; }
    }
HTTP
($ok, $out) = $sb->nginx_test_config($conf);
ok(!$ok, 'nginx -t: the console and the status in one location fail');
like($out, qr/cannot share a location with a webhook or the status/,
     '... whichever comes first');
$conf =~ s!location /both/ [{][^}]*[}]!!;
($ok, $out) = $sb->nginx_test_config($conf);
ok(!$ok, '... also with the console first');
like($out, qr/"mt5_credit_console" in \S+:\d+ cannot share a location/,
     '... naming its file and line');

$sb->write_file('short.key', "too short\n");
$conf = $sb->nginx_conf(<<'HTTP');
    mt5_credit_console_key_file %%DIR%%/short.key;
HTTP
($ok, $out) = $sb->nginx_test_config($conf);
ok(!$ok, 'nginx -t: a console key file of 9 bytes fails');
like($out, qr/mt5_credit_console_key_file "\S+short\.key" holds 9 bytes: at least 32/,
     '... saying how many it holds and needs');
$conf = $sb->nginx_conf(<<'HTTP');
    mt5_credit_console_key_file %%DIR%%/nowhere.key;
HTTP
($ok, $out) = $sb->nginx_test_config($conf);
like($out, qr/mt5_credit_console_key_file "\S+nowhere\.key" cannot be opened/,
     '... and a missing one, naming it');

$conf = $sb->nginx_conf(<<'HTTP');
    mt5_credit_console_postgres "host=db.example dbname=mt5credit user=web";
HTTP
($ok, $out) = $sb->nginx_test_config($conf);
ok(!$ok, 'nginx -t: a console pool on a host name fails');
like($out, qr/mt5_credit_console_postgres host "db\.example" is a name/,
     '... saying it would block the worker, under its own directive');

done_testing;
