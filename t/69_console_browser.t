#!/usr/bin/perl
#
# The console in a real browser: Debian's headless Chromium, driven through
# the DevTools protocol (Mt5Credit::Browser), each person in a browser
# context of their own, let in by nginx's auth_basic.  Impossible:
#   - one person moving money alone through the pages: ann proposes a
#     re-queue, is shown "waiting for a second person" and no Approve
#     button, and her own approval, sent from her page, is refused; ben
#     approves it, and the worker makes the deal
#   - a reader acting: rita sees the case without its actions, and her
#     approval, sent from her page, is refused
#   - a cross-site page acting with a person's credentials: a form post and
#     a fetch from another origin, carrying ann's Authorization, change
#     nothing
#   - a planted script running: markup in a case's details, in a note and
#     in a settlement file reconciled by mt5credit reconcile is shown as
#     text, never run
#   - a withdrawal approved by who prepared it, or without the approver
#     seeing what is signed: ann prepares and is shown "waiting"; ben is
#     shown the plan and the digest, and approves exactly that
#   - SQL in any argument of any endpoint, sent by the console's own page
#     with its person's credentials (issue 29): 400 each, nothing moved
#   - a money decision without the person's code (sql/065): the page
#     asks for it beside the buttons, says why a proposal without it is
#     refused, and sends what the person types from their app
# Screenshots of the queue and the case pages are written to the sandbox
# (screenshots/), for a person to look at.

use strict;
use warnings;

use File::Path qw(make_path);
use MIME::Base64 qw(encode_base64);
use POSIX qw(strftime);
use Test::More;

use lib 't/lib';
use JSON::PP;
use Mt5Credit::Browser;
use Mt5Credit::ConsoleAttack qw(console_attacks);
use Mt5Credit::Provider;
use Mt5Credit::Settlement;
use Mt5Credit::Stack;
use Mt5Credit::Totp;
use Mt5Credit::Worker;

plan skip_all => 'no chromium' unless Mt5Credit::Browser::available();

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $evil_port = Mt5Credit::Sandbox::free_port();

my $st = Mt5Credit::Stack->new(
    nginx_http => 'mt5_credit_console_postgres "host=127.0.0.1 '
                . 'port=%%PGPORT%% dbname=mt5credit user=web";'
                . "
    server {
        listen 127.0.0.1:$evil_port;
        root %%DIR%%/evil;
    }",
    locations => "location /console/ {
            auth_basic \"mt5-credit\";
            auth_basic_user_file %%DIR%%/htpasswd;
            mt5_credit_console;
            mt5_credit_console_person \$remote_user;
            mt5_credit_console_origin http://127.0.0.1:%%PORT%%;
            alias $ROOT/ngx_mt5_credit_module/console/;
            # with nosniff, a script or a style sheet of another type is
            # refused by the browser (Debian's nginx.conf includes
            # mime.types at http level; these are the three the pages use)
            types { text/html html; text/css css;
                    application/javascript js; }
        }");
my $sb = $st->sb;
my $port = $sb->nginx_port;
my $base = "http://127.0.0.1:$port/console/";
$st->account(login => 70691);

my $hash = `openssl passwd -apr1 -salt mt5cred pw`;
chomp $hash;
$sb->write_file('htpasswd', join '', map { "$_:$hash\n" } qw(ann ben rita));
$sb->psql(<<'SQL');
CREATE ROLE ann  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE ben  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE rita NOLOGIN IN ROLE mt5credit_reader, mt5credit_person;
CREATE ROLE web  LOGIN NOINHERIT IN ROLE mt5credit_console;
GRANT ann, ben, rita TO web;
SELECT mt5credit.person_identity_map(p, p)
FROM unnest(ARRAY['ann', 'ben', 'rita']) p;
SQL

# ann's and ben's authenticator apps, enrolled as a person admin would
# (mt5credit persons enrol, t/70)
my $app = Mt5Credit::Totp->new(sb => $sb);
$app->enrol($_, $sb->sql1("SELECT mt5credit.person_totp_enrol('$_')"))
    for qw(ann ben);

# a failed credit with its case; its details carry planted markup
# the payment's webhook carries markup in its own bytes (a description)
my $dep = $sb->create_deposit(client => 'alice', login => 70691,
                              amount => 3300);
(my $body = Mt5Credit::Provider::stripe_event(deposit => $dep, amount => 3300,
                                              pi => 'pi_browser_1'))
    =~ s/"mode": "payment"/"mode": "payment", "description": "<script>document.title='owned'<\/script>"/
    or die 'no place for the description';
my $res = $st->webhook($body);
die "webhook: $res->{status}" unless $res->{status} == 200;
my ($credit) = $res->{body} =~ /"credit":(\d+)/;
my $case = $st->failed_with_case($credit, 'console-browser-1', <<'SQL');
jsonb_build_object('retcode', 10019, 'comment',
        '<img src=x onerror="document.title=''owned''">'
        || '<script>document.title="owned"</script>')
SQL

# a reconciliation finding on the case, its settlement row carrying markup
# as a settlement file's column would (a fixture: the job is t/60's)
$sb->psql(<<"SQL");
WITH r AS (
    INSERT INTO mt5credit.recon_run (provider, business_day, time_zone,
        currency, window_start, window_end, deal_window_end,
        settlement_format, settlement_sha256, input_digest, verdict,
        finished_at)
    VALUES ('stripe', '2026-11-30', 'UTC', 'USD', '2026-11-30', '2026-12-01',
        '2026-12-02', 'stripe', repeat('b', 64), 'fixture', 'breaks', now())
    RETURNING id)
INSERT INTO mt5credit.recon_item (run_id, kind, item_key, severity, movement,
    amount_minor, currency, settlement, credit, case_id)
SELECT r.id, 'credited_not_settled', 'pi_browser', 'high', 'payment', 3300,
    'USD', jsonb_build_object('description',
        '<script>document.title="owned"</script><img src=x onerror="document.title=1">'),
    jsonb_build_object('reference', 'dep:$credit'), $case
FROM r;
SQL

# another origin's page: a form post and a fetch to the console's API
make_path($sb->dir . '/evil');
$sb->write_file('evil/evil.html', <<"HTML");
<!doctype html><title>evil</title>
<form id=f method=POST enctype="text/plain" action="${base}api/act">
<input name='{"action":"assign","case":$case,"to":"ann","note":"evil","x":"' value='"}'>
</form>
<script>
fetch("${base}api/act", { method: "POST", mode: "no-cors",
  credentials: "include", headers: { "Content-Type": "text/plain" },
  body: JSON.stringify({ action: "note", "case": $case, note: "evil" }) })
  .finally(function () { window.fetched = 1; document.getElementById("f").submit(); });
</script>
HTML

my $shots = $sb->dir . '/screenshots';
make_path($shots);

my $browser = Mt5Credit::Browser->launch($sb);
sub person {
    my ($who) = @_;
    my $p = $browser->page(headers => {
        Authorization => 'Basic ' . encode_base64("$who:pw", '') });
    $p->navigate($base);
    return $p;
}

my $title = 'mt5-credit console';
my $q = "$case";

# --- ann proposes --------------------------------------------------------------

my $ann = person('ann');
ok($ann->wait_for("document.querySelectorAll('#cases tbody tr.case').length > 0"),
   'ann: the queue shows the case');
ok($ann->wait_for("document.getElementById('who').textContent === 'ann'"),
   '... and who she is');
ok($ann->screenshot("$shots/queue-ann.png") > 1000, '... (screenshots/queue-ann.png)');

# every endpoint with SQL in every argument, fetched by the page itself,
# as the browser encodes a URL
my @attacks = map { $_->[0] } console_attacks($case);
my $statuses = $ann->js('Promise.all(' . JSON::PP->new->encode(\@attacks)
    . '.map(function (p) { return fetch("api/" + p).then(function (r) '
    . '{ return r.status; }); }))');
is(scalar(grep { $_ != 400 } @$statuses), 0, 'SQL in every argument of every '
   . 'endpoint, from ann\'s page: 400 each (' . scalar(@$statuses) . ')');
is($sb->sql1("SELECT count(*) FROM mt5credit.money_proposal"), 0,
   '... no proposal');
is($st->status_of($credit), 'failed', '... the credit still failed');

$ann->click("#cases tbody tr.case");
ok($ann->wait_for("!document.getElementById('case').hidden"), 'she opens it');
like($ann->js("document.getElementById('case-facts').textContent"),
     qr/<img src=x onerror=/, '... the planted markup is shown as text');
is($ann->js("document.querySelectorAll('#case img, #case script').length"), 0,
   '... and is no element');
is($ann->js('document.title'), $title, '... and never ran');
like($ann->js("document.getElementById('events').textContent"),
     qr/"description": "<script>document\.title='owned'<\/script>"/,
     '... the webhook\'s bytes, its planted markup as text');
like($ann->js("document.getElementById('case-recon').textContent"),
     qr/<script>document\.title=\\"owned\\"<\/script><img src=x onerror=/,
     '... the settlement record beside our credit, its markup as text');
is($ann->js("document.querySelectorAll('#case-recon script, #case-recon img').length"),
   0, '... never an element');

ok($ann->js("document.getElementById('no-second-factor').hidden"),
   'she has a second factor: no warning');
$ann->type('#note', 'the account was enabled <script>document.title="owned"</script>');
$ann->click('#propose-requeue');
ok($ann->wait_for("/6-digit code/.test(document.getElementById('problem')"
                  . ".textContent)"),
   'a proposal without her code: the page says it needs the 6-digit code');
is($sb->sql1("SELECT count(*) FROM mt5credit.money_proposal"), 0,
   '... and none is made');
$ann->type('#code', scalar $app->code('ann'));
$ann->click('#propose-requeue');
ok($ann->wait_for("/waiting for a second person/.test("
                  . "document.querySelector('#proposals tbody').textContent)"),
   'she proposes a re-queue, and is told it waits for a second person');
is($ann->js("document.querySelectorAll('#proposals button').length"), 0,
   '... with no Approve button of hers');
like($ann->js("document.getElementById('desk').textContent"),
     qr/<script>document\.title="owned"<\/script>/,
     '... her note, markup and all, shown as text');
is($ann->js('document.title'), $title, '... never run');
ok($ann->screenshot("$shots/case-ann.png") > 1000, '(screenshots/case-ann.png)');

my $proposal = $sb->sql1("SELECT id FROM mt5credit.money_proposal "
                         . "WHERE case_id = $case");
# (with her code: the two-person rule refuses it, not a missing code)
my $code = $app->code('ann');
my $self_approve = <<"JS";
fetch('api/whoami').then(r => r.json()).then(w => fetch('api/act', {
  method: 'POST', headers: { 'Content-Type': 'application/json',
                             'X-CSRF-Token': w.csrf },
  body: JSON.stringify({ action: 'approve', proposal: $proposal, note: 'me',
                         code: '$code' })
})).then(r => r.status)
JS
is($ann->js($self_approve), 409, 'her own approval, sent from her page: 409');
is($st->status_of($credit), 'failed', '... nothing moved');

# --- rita only looks -----------------------------------------------------------

my $rita = person('rita');
ok($rita->wait_for("/may look, not act/.test(document.getElementById('who').textContent)"),
   'rita: the console says she may look, not act');
ok($rita->wait_for("document.querySelectorAll('#cases tbody tr.case').length > 0"),
   '... she sees the queue');
is($rita->js($self_approve), 403, '... and her approval, sent from her page: 403');
ok($rita->screenshot("$shots/queue-rita.png") > 1000, '(screenshots/queue-rita.png)');

# --- a cross-site page, with ann's credentials ---------------------------------

my $before = $sb->sql1("SELECT count(*) FROM mt5credit.case_action "
                       . "WHERE case_id = $case");
my $evil = $browser->page(headers => {
    Authorization => 'Basic ' . encode_base64('ann:pw', '') });
$evil->navigate("http://127.0.0.1:$evil_port/evil.html");
ok($evil->wait_for('window.fetched === 1 || document.title !== "evil"'),
   'a page of another origin posts to the console, with ann\'s credentials');
sleep 1;
is($sb->sql1("SELECT count(*) FROM mt5credit.case_action WHERE case_id = $case"),
   $before, '... and nothing is recorded');
my @posts = grep { m{"POST /console/api/act .*"http://127\.0\.0\.1:$evil_port/} }
    do { open my $fh, '<', $sb->dir . '/access.log' or die; <$fh> };
is(scalar @posts, 2, '... its form post and its fetch reached nginx');
is(scalar(grep { m{" (?:403|415) } } @posts), 2, '... and both were refused');
is(scalar(grep { m{^\S+ - \S+ \[[^\]]+\] "\{} }
          do { open my $fh, '<', $sb->dir . '/access.log' or die; <$fh> }),
   0, '... their bodies discarded, never read as a request of their own');

# --- ben approves; the worker makes the deal -----------------------------------

my $ben = person('ben');
ok($ben->wait_for("document.querySelectorAll('#cases tbody tr.case').length > 0"),
   'ben: the queue');
$ben->click("#cases tbody tr.case");
ok($ben->wait_for("Array.from(document.querySelectorAll('#proposals button'))"
                  . ".some(b => b.textContent === 'Approve')"),
   '... the proposal, with an Approve button for him');
ok($ben->screenshot("$shots/case-ben.png") > 1000, '(screenshots/case-ben.png)');
$ben->type('#note', 'checked the account');
$ben->type('#code', scalar $app->code('ben'));
$ben->js("Array.from(document.querySelectorAll('#proposals button'))"
         . ".find(b => b.textContent === 'Approve').click()");
ok($ben->wait_for("/approved by ben/.test(document.querySelector('#proposals tbody').textContent)"),
   'he approves it, and the page says so');
is($st->status_of($credit), 'pending', '... the credit is re-queued');

$st->start_worker('w1');
ok($st->wait_status($credit, 'done'), 'the worker makes the deal');
is(scalar @{ $st->deals_of($credit) }, 1, '... once');
$st->stop_worker('w1');

# --- a withdrawal: ann prepares, ben approves the digest he is shown -----------

my $wd = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
    . "'alice', 'console-browser-wd', 'stripe', 'live1', 70691, 900, 'USD', "
    . "'ba_console_dest')", user => 'portal');
$ann->click('nav a[data-view="withdrawals"]');
ok($ann->wait_for("/$wd/.test(document.querySelector('#wd-list tbody').textContent)"),
   "ann: the withdrawals queue holds $wd");
$ann->click('#wd-list tbody tr.case');
ok($ann->wait_for("!document.getElementById('withdrawal').hidden && "
                  . "!document.getElementById('wd-prepare').hidden"),
   '... she opens it: Prepare');
$ann->type('#wd-code', scalar $app->code('ann'));
$ann->click('#wd-prepare');
ok($ann->wait_for("!document.getElementById('wd-waiting').hidden"),
   '... prepared: waiting for a second person');
ok($ann->js("document.getElementById('wd-approve').hidden"),
   '... and no Approve for her');
ok($ann->screenshot("$shots/withdrawal-ann.png") > 1000,
   '(screenshots/withdrawal-ann.png)');
my $digest = $sb->sql1("SELECT prepared_digest FROM mt5credit.withdrawal "
                       . "WHERE reference = '$wd'");

$ben->click('nav a[data-view="withdrawals"]');
ok($ben->wait_for("/$wd/.test(document.querySelector('#wd-list tbody').textContent)"),
   'ben: the queue');
$ben->click('#wd-list tbody tr.case');
ok($ben->wait_for("!document.getElementById('withdrawal').hidden && "
                  . "!document.getElementById('wd-actions').hidden && "
                  . "!document.getElementById('wd-approve').hidden"),
   '... Approve, for him');
is($ben->js("document.getElementById('wd-digest').textContent"), $digest,
   '... beside the digest ann prepared')
    or diag $ben->js("fetch('api/withdrawal?ref=$wd').then(r => r.text())");
like($ben->js("document.querySelector('#wd-plan tbody').textContent"),
     qr/refund.*900 USD/, '... and the plan it signs (a refund of the deposit)');
$ben->type('#wd-code', scalar $app->code('ben'));
$ben->click('#wd-approve');
ok($ben->wait_for("/approved/.test(document.getElementById('wd-facts').textContent)"),
   'he approves it');
is($sb->sql1("SELECT status || ' ' || prepared_by || ' ' || approved_by FROM "
             . "mt5credit.withdrawal WHERE reference = '$wd'"),
   'approved ann ben', '... two people, in the database');

# --- a settlement file with markup in it, through mt5credit reconcile ----------

my $rconf = Mt5Credit::Worker::config($sb, 'recon',
    servers => [ [ 'live1', $st->sim, recon_groups => 'real\\usd' ] ],
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                      . ' dbname=mt5credit user=recon"',
    recon_out => $sb->dir, recon_match_window => 0);
# (at most 63 bytes: the column's limit, which reconcile enforces)
my $planted_file = '<script>document.title=1</script><img src=x onerror=x()>';
my @settled = ({ id => 'txn_browser_1', category => 'charge',
                 source => 'ch_browser_1', pi => 'pi_browser_lost',
                 gross => 4400, fee => 0, at => time,
                 deposit => $planted_file });
my $sfile = $sb->write_file('settlement.csv',
                            Mt5Credit::Settlement::stripe_csv(\@settled));
my $cfile = $sb->write_file('control.csv',
                            Mt5Credit::Settlement::control_csv(\@settled));
my ($rrc, $rout) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $rconf,
    '--provider', 'stripe', '--day', strftime('%Y-%m-%d', gmtime),
    '--tz', 'UTC', '--currency', 'USD', '--format', 'stripe',
    '--settlement', $sfile, '--control', $cfile);
like($rout, qr/^run \d+: breaks/m, 'a settlement file whose row carries markup, '
     . 'reconciled: a break') or diag $rout;

$ann->click('nav a[data-view="recon"]');
ok($ann->wait_for("document.querySelectorAll('#runs tbody tr.case').length >= 2"),
   'the reconciliation runs, that one among them');
$ann->click('#runs tbody tr.case');
ok($ann->wait_for("/settled_not_credited/.test("
                  . "document.querySelector('#run-items tbody').textContent)"),
   '... its findings: the row settled and never credited');
like($ann->js("document.querySelector('#run-items tbody').textContent"),
     qr/\Q$planted_file\E/, '... the file\'s markup shown as text');
is($ann->js("document.querySelectorAll('#run-items script, #run-items img').length"),
   0, '... never an element');
is($ann->js('document.title'), $title, '... never run');
like($ann->js("document.getElementById('run-report').getAttribute('href')"),
     qr/^api\/recon_report\?id=\d+$/, '... and its HTML report to download');
ok($ann->screenshot("$shots/recon-run-ann.png") > 1000,
   '(screenshots/recon-run-ann.png)');

# --- the other pages: search, reconciliation, status ---------------------------

$ann->click('nav a[data-view="search-view"]');
$ann->type('#search-form input[name=q]', '70691');
$ann->js("document.getElementById('search-form').requestSubmit()");
ok($ann->wait_for("document.querySelectorAll('#found-credits tbody tr').length > 0"),
   'search by the login finds its credits');
ok($ann->wait_for("/$wd/.test(document.querySelector('#found-withdrawals tbody').textContent)"),
   '... and its withdrawal');
ok($ann->screenshot("$shots/search-ann.png") > 1000, '(screenshots/search-ann.png)');

$ann->click('nav a[data-view="events-view"]');
ok($ann->wait_for("document.querySelectorAll('#event-list tbody tr.case').length > 0"),
   'the stored events');
$ann->click('#event-list tbody tr.case');
ok($ann->wait_for("/checkout\\.session\\.completed/.test("
                  . "document.getElementById('event-body').textContent)"),
   '... one of them: its bytes as received, as text');
ok(!$ann->js("document.getElementById('event-actions').hidden"),
   '... and, for ann, its replay');
ok($ann->screenshot("$shots/event-ann.png") > 1000, '(screenshots/event-ann.png)');

$ann->click('nav a[data-view="recon"]');
ok($ann->wait_for("!document.getElementById('recon').hidden"),
   'the reconciliation runs');
ok($ann->screenshot("$shots/recon-ann.png") > 1000, '(screenshots/recon-ann.png)');

$rita->click('nav a[data-view="status-view"]');
ok($rita->wait_for("document.querySelectorAll('#work tbody tr').length > 0"),
   'rita: the status page');
ok($rita->js("document.getElementById('pause-form').hidden"),
   '... without the pause form');
ok($rita->screenshot("$shots/status-rita.png") > 1000, '(screenshots/status-rita.png)');

is($ann->js('document.title') . $ben->js('document.title'), $title x 2,
   'no planted script ran in any page');

$browser->quit;
done_testing;
