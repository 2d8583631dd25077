#!/usr/bin/perl
#
# The security suite: what each party may do, what never leaks, and what
# cannot be switched off quietly, on the whole system.  Impossible:
#   - the edge's database role doing anything but call ingest(): reading,
#     writing or calling anything else
#   - the worker, the portal, the desk or reconciliation writing a table
#     directly (reconciliation: only COPY into its three staging tables),
#     or the worker inserting a webhook event
#   - a webhook secret, a signature, the MT5 manager password or the
#     provider API key appearing in any log or error message of the run
#   - a replay older than the tolerance being accepted; a replay inside
#     it being anything but a duplicate of the stored event
#   - a method other than POST, or a body over the bound, reaching the
#     handler
#   - TLS verification to MT5 being off without it being said, or a
#     certificate that does not verify being used by default
#   - money moving on one person's word: a re-queue, a correction, a
#     withdrawal approval by whoever proposed or prepared it

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Provider qw(stripe_event stripe_headers stripe_sign);
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my $SECRET = $Mt5Credit::Stack::SECRET;
$st->account(login => 79001);

# --- database roles: exactly what each may do ------------------------------------

sub table_privileges {
    my ($role) = @_;
    return [ map { "$_->[0]:$_->[1]" } @{ $sb->psql(<<"SQL") } ];
SELECT c.relname, p.priv
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE',
                        'REFERENCES', 'TRIGGER']) AS p (priv)
WHERE n.nspname = 'mt5credit' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND has_table_privilege('$role', c.oid, p.priv)
ORDER BY 1, 2
SQL
}

sub functions_of {
    my ($role) = @_;
    return [ map { $_->[0] } @{ $sb->psql(<<"SQL") } ];
SELECT DISTINCT p.proname
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'mt5credit'
  AND has_function_privilege('$role', p.oid, 'EXECUTE')
ORDER BY 1
SQL
}

is_deeply(table_privileges('edge'), [], 'the edge role has no privilege on '
          . 'any table');
is_deeply(functions_of('edge'), [ 'ingest', 'ingest_batch' ],
          '... and may execute ingest() and ingest_batch() (several '
          . 'webhooks, each as ingest()) and nothing else');
like($sb->psql('SELECT count(*) FROM mt5credit.webhook_event', user => 'edge',
               may_fail => 1), qr/permission denied/,
     '... it cannot read the events it stored');
like($sb->psql('SELECT * FROM mt5credit.claim_credit(\'x\', 10, '
               . 'ARRAY[\'live1\'])', user => 'edge', may_fail => 1),
     qr/permission denied/, '... nor claim a credit');

for my $role (qw(worker portal ops_alice)) {
    is_deeply([ grep { !/:SELECT$/ } @{ table_privileges($role) } ], [],
              "$role writes no table directly");
}
like($sb->psql("INSERT INTO mt5credit.webhook_event DEFAULT VALUES",
               user => 'worker', may_fail => 1), qr/permission denied/,
     'the worker cannot insert a webhook event');
like($sb->psql("UPDATE mt5credit.mt5_credit SET status = 'done'",
               user => 'worker', may_fail => 1), qr/permission denied/,
     '... nor set a credit done by hand');
is_deeply([ grep { !/:SELECT$/ } @{ table_privileges('recon') } ],
          [ 'recon_control_in:INSERT', 'recon_deal_in:INSERT',
            'recon_settlement_in:INSERT' ],
          'reconciliation may only COPY into its three staging tables');
ok(!grep({ $_ eq 'ingest' } @{ functions_of('worker') }),
   'the worker cannot call ingest()');
ok(!grep({ /^(case_decide|withdrawal_approve)$/ } @{ functions_of('worker') }),
   '... nor approve anything');
is_deeply(table_privileges('mt5credit_audit'),
          [ map { "$_:SELECT" } qw(case_action client_name credit_history
                                   deposit_history journal money_proposal
                                   payout_history
                                   risk_rule_change webhook_event withdrawal
                                   withdrawal_refund_history) ],
          'the auditor (081) reads the journal and the tables it chains, '
          . 'and writes nothing');
is_deeply(functions_of('mt5credit_audit'), [ 'database_timeline_now' ],
          '... and executes nothing but the timeline it compares heads with');
is($sb->sql1("SELECT rolcanlogin::text FROM pg_roles WHERE rolname = "
             . "'mt5credit_owner'"), 'false', 'the owner of it all cannot log in');

# --- replay: the tolerance window -------------------------------------------------

my $ref = $sb->create_deposit(client => 'alice', login => 79001,
                              amount => 9000, key => 'security-1');
my $body = stripe_event(deposit => $ref, amount => 9000, pi => 'pi_sec_1',
                        id => 'evt_sec_1');
my $old = $sb->http('POST', '/webhooks/stripe', body => $body,
                    headers => stripe_headers($SECRET, $body, time - 3600));
is($old->{status}, 400, 'a replay signed an hour ago is rejected (400)');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event WHERE "
             . "provider_event_id = 'evt_sec_1'"), 0, '... and not stored');
my $first = $st->webhook($body);
is($first->{status}, 200, 'signed now: accepted');
my $again = $sb->http('POST', '/webhooks/stripe', body => $body,
                      headers => stripe_headers($SECRET, $body, time - 60));
is($again->{status}, 200, 'the same event replayed inside the tolerance');
like($again->{body}, qr/duplicate/, '... is a duplicate');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE "
             . "provider_payment_id = 'pi_sec_1'"), 1, '... one credit');

# a forged one: its signature must not be logged either
my $forged_sig = stripe_sign('whsec_not_the_secret', $body);
my $forged = $sb->http('POST', '/webhooks/stripe', body => $body,
    headers => [ [ 'Stripe-Signature', $forged_sig ],
                 [ 'Content-Type', 'application/json' ] ]);
is($forged->{status}, 400, 'a forged signature: 400');

# --- methods and body size ----------------------------------------------------------

is($sb->http('GET', '/webhooks/stripe')->{status}, 405, 'GET: 405');
is($sb->http('PUT', '/webhooks/stripe', body => $body,
             headers => stripe_headers($SECRET, $body))->{status}, 405,
   'a signed PUT: 405');
my $huge = '{"pad": "' . ('x' x (2 * 1024 * 1024)) . '"}';
is($sb->http('POST', '/webhooks/stripe', body => $huge,
             headers => stripe_headers($SECRET, $huge))->{status}, 413,
   'a signed 2 MB body: 413 before the handler');

# --- TLS to MT5 ---------------------------------------------------------------------

{
    # no CA for the simulator's self-signed certificate: verification fails
    my $conf = Mt5Credit::Worker::config($sb, 'noca',
        servers => [ [ 'live1', $sim, ca_file => undef ] ],
        call_timeout => 1, lease => 8);
    Mt5Credit::Worker::start($sb, 'noca', $conf);
    my $id = $st->pay(login => 79001, amount => 1234);
    sleep 4;
    Mt5Credit::Worker::stop($sb, 'noca');
    isnt($st->status_of($id), 'done',
         'a certificate that does not verify is not used (default on)');
    like(Mt5Credit::Worker::log_of($sb, 'noca'),
         qr/certificate|SSL|TLS/i, '... and the log says why');

    $conf = Mt5Credit::Worker::config($sb, 'nocheck',
        servers => [ [ 'live1', $sim, ca_file => undef, tls_verify => 'off' ] ],
        call_timeout => 1, lease => 8);
    Mt5Credit::Worker::start($sb, 'nocheck', $conf);
    ok($st->wait_status($id, 'done', 20), 'tls_verify = off connects');
    Mt5Credit::Worker::stop($sb, 'nocheck');
    like(Mt5Credit::Worker::log_of($sb, 'nocheck'),
         qr/TLS verification is off/i, '... and says so in the log');
}

# --- two people for money ------------------------------------------------------------

{
    $sim->fault(kind => 'retcode', endpoint => '/api/trade/balance',
                retcode => '10019 Not enough money', count => 1);
    Mt5Credit::Worker::start($sb, 'w2',
        $st->worker_config('w2', call_timeout => 1, lease => 8));
    my $id = $st->pay(login => 79001, amount => 2222);
    ok($st->wait_status($id, 'failed', 20), 'MT5 refuses a credit: failed');
    my $case = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = $id");
    my $p = $sb->sql1("SELECT mt5credit.case_propose($case, 'requeue_credit', "
        . "NULL, NULL, 'fixed', '[]')", user => 'ops_alice');
    like($sb->psql("SELECT mt5credit.case_decide($p, 'approve', 'me')",
                   user => 'ops_alice', may_fail => 1, raw => 1),
         qr/two-person rule/, 'the proposer cannot approve moving money');
    like($sb->psql("UPDATE mt5credit.money_proposal SET status = 'approved', "
                   . "decided_by = proposed_by, decided_at = now() "
                   . "WHERE id = $p", may_fail => 1),
         qr/money_proposal_four_eyes/, '... not even as the owner');
    is($st->status_of($id), 'failed', '... nothing moved');
    $sb->psql("SELECT mt5credit.case_decide($p, 'approve', 'checked')",
              user => 'ops_bob');
    ok($st->wait_status($id, 'done', 20), 'a second person approves: made');
    Mt5Credit::Worker::stop($sb, 'w2');
}

# --- nothing secret in any log -----------------------------------------------------

{
    my $dir = $sb->dir;
    my @logs = grep { -f } glob("$dir/*.log $dir/*.out $dir/pg.log");
    my $all = join '', map { local $/; open my $f, '<', $_ or die; <$f> }
              @logs;
    my ($good_sig) = stripe_sign($SECRET, $body) =~ /v1=([0-9a-f]+)/;
    my ($bad_sig) = $forged_sig =~ /v1=([0-9a-f]+)/;
    ok(@logs >= 4, 'the logs of nginx, PostgreSQL and the workers are read ('
       . scalar(@logs) . ')');
    unlike($all, qr/\Q$SECRET\E/, 'no webhook secret in any log');
    unlike($all, qr/\Q$bad_sig\E/, 'no forged signature');
    unlike($all, qr/v1=[0-9a-f]{64}/, 'no signature value at all');
    my $pw = $sim->password;
    unlike($all, qr/\Q$pw\E/, 'no MT5 manager password');
    like($sb->error_log, qr/signature/, '(the rejections are logged, without '
         . 'the values)');
}

done_testing;
