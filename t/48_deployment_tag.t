#!/usr/bin/perl
#
# Two deployments, one MT5 (or one Stripe account): a staging database
# pointed at live MT5 makes deals named like production's.  Each database
# carries a deployment tag, set once, in every MT5 comment and payout key
# made since (sql/036).  Impossible:
#   - production's resolver taking another deployment's deal for its own
#     (a "dep:5" made elsewhere, untagged or tagged otherwise): the credit
#     is made once, under its own tagged comment, and recorded with it
#   - a credit made before the tag losing its deal: looked up as it was
#     made, untagged
#   - a worker configured for another deployment (or none) working on
#     this database: it stops at start, claims and calls nothing
#   - the tag changing or vanishing once set, or a bad one being set
#   - reconciliation reading this deployment's tagged deals as foreign:
#     stored untagged beside the comment MT5 holds; another's keep theirs
#   - a refund leg or payout of this deployment sent under an untagged key

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Mt5Sim;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);

$st->account(login => 74801, balance => '1000.00');

sub comments_of {
    my ($ref) = @_;
    return join ',', sort map { $_->{Comment} }
        grep { ($_->{Comment} // '') =~ /(^|:)\Q$ref\E$/ }
        @{ $sim->ledger->{deals} };
}

sub balance_calls { $sim->stats->{endpoints}{'/api/trade/balance'}{executed} // 0 }

# --- before any tag: a credit whose answer is lost -------------------------------

$st->start_worker('w0', %fast);
my $legacy = $st->pay(login => 74801, amount => 1111);
ok($st->wait_status($legacy, 'done', 15), 'untagged database: a credit is done');
is(comments_of($st->ref_of($legacy)), $st->ref_of($legacy),
   '... its deal says its reference, untagged, as ever');

$sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
my $old = $st->pay(login => 74801, amount => 2222);
ok($st->wait_status($old, 'unknown', 15),
   'a credit made before the tag: executed, answer lost: unknown');
$st->stop_worker('w0');
$sim->clear_faults;

# --- the tag, set once ---------------------------------------------------------------

like($sb->psql("INSERT INTO mt5credit.deployment (tag) VALUES ('Prod!')",
               may_fail => 1), qr/deployment_tag_check/,
     'a tag of other than a-z0-9 (at most 8) is refused');
$sb->psql("INSERT INTO mt5credit.deployment (tag) VALUES ('prod')");
is($sb->sql1('SELECT mt5credit.deployment_tag()'), 'prod',
   'the owner sets the tag: prod');
like($sb->psql("UPDATE mt5credit.deployment SET tag = 'stg'", may_fail => 1),
     qr/MC\d+|append-only|refuse|cannot/i, '... it cannot be changed');
like($sb->psql("DELETE FROM mt5credit.deployment", may_fail => 1),
     qr/MC\d+|append-only|refuse|cannot/i, '... nor removed');
like($sb->psql("INSERT INTO mt5credit.deployment (tag) VALUES ('stg')",
               may_fail => 1), qr/deployment_pkey/, '... nor set twice');
like($sb->psql("UPDATE mt5credit.mt5_credit SET deployment_tag = 'prod' "
               . "WHERE id = $legacy", may_fail => 1),
     qr/never changes/, 'a credit\'s deployment never changes');

# --- workers of another deployment stop at start -------------------------------------

for my $tag ('stg', '') {
    my $conf = $st->worker_config("wrong$tag", %fast,
                                  ($tag ne '' ? (deployment_tag => $tag) : ()));
    my $calls = balance_calls();
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $conf,
                                            '--once');
    my $what = $tag eq '' ? 'no deployment_tag' : "deployment_tag $tag";
    is($rc, 1, "a worker configured with $what stops at start");
    like($out . Mt5Credit::Worker::log_of($sb, "wrong$tag"),
         qr/the database is deployment "prod", this configuration says/,
         '... saying which deployment is which');
    is(balance_calls(), $calls, '... and calls nothing');
    is($st->status_of($old), 'unknown', '... and settles nothing');
}

# --- this deployment's worker --------------------------------------------------------

$st->start_worker('w1', %fast, deployment_tag => 'prod');

ok($st->wait_status($old, 'done', 20),
   'the credit made before the tag is found, under its untagged comment');
is(comments_of($st->ref_of($old)), $st->ref_of($old), '... and made once');

my $new = $st->pay(login => 74801, amount => 3333);
ok($st->wait_status($new, 'done', 15), 'a credit made after the tag is done');
is(comments_of($st->ref_of($new)), 'prod:' . $st->ref_of($new),
   '... its deal says prod:<its reference>');
like($st->credit($new)->{reference}, qr/^dep:[0-9a-f]{18}$/,
   '... while its reference stays untagged');

# another deployment's deals with this credit's reference
{
    $sim->fault(kind => 'drop_before', endpoint => '/api/trade/balance');
    my $id = $st->pay(login => 74801, amount => 4444);
    ok($st->wait_status($id, 'unknown', 15), 'dropped before executing: unknown');
    my $c = Mt5Credit::Mt5Sim::Client->new_tls(port => $sim->port,
                                               ca => $sim->ca_file);
    is($c->auth->{retcode}, 0, '(another deployment\'s manager logs in)');
    for my $comment ($st->ref_of($id), 'stg:' . $st->ref_of($id)) {
        my $r = $c->call('/api/trade/balance', login => 74801, type => 2,
                         balance => '44.44', comment => $comment);
        like($r->{body}, qr/"0 Done"/, "(and books $comment for 44.44)");
    }
    $c->close;
    $sim->clear_faults;

    ok($st->wait_status($id, 'done', 30), 'the credit ends done');
    my ($ours) = grep { $_->{Comment} eq 'prod:' . $st->ref_of($id) }
                 @{ $sim->ledger->{deals} };
    ok($ours, '... made once under its own comment');
    is($st->credit($id)->{ticket}, $ours && $ours->{Deal},
       '... and recorded with that deal, never another deployment\'s');
    is(comments_of($st->ref_of($id)),
       join(',', map { $_ . $st->ref_of($id) } '', 'prod:', 'stg:'),
       '... one deal of each deployment');
}

# --- reconciliation reads the comment without this deployment's tag -------------

# as the job loads them: staged, then moved into a run by recon_load_deals()
my $untagged = $sb->psql(<<'SQL', raw => 1);
BEGIN;
SELECT run_id FROM mt5credit.recon_begin('stripe', '2026-11-30', 'UTC', 'USD',
    'stripe', repeat('0', 64), NULL, '0 s');
INSERT INTO mt5credit.recon_deal_in (run_id, mt5_server, deal_ticket,
    mt5_login, amount_minor, currency, comment, deal_epoch)
SELECT max(id), 'live1', t, 74801, 100, 'USD', c, 1764460800
FROM mt5credit.recon_run,
     (VALUES (1, 'prod:dep:5'), (2, 'stg:dep:5'), (3, 'dep:5')) v (t, c)
GROUP BY t, c;
SELECT mt5credit.recon_load_deals(max(id), md5('deals'))
FROM mt5credit.recon_run;
SELECT 'untagged ' || string_agg(comment || '=' || mt5_comment, ' '
                                 ORDER BY deal_ticket)
FROM mt5credit.recon_deal
WHERE run_id = (SELECT max(id) FROM mt5credit.recon_run);
ROLLBACK;
SQL
is(($untagged =~ /^untagged (.*)$/m)[0],
   'dep:5=prod:dep:5 stg:dep:5=stg:dep:5 dep:5=dep:5',
   'a deal of ours is compared untagged; another deployment\'s keeps its tag');

# --- a refund or payout key and its debit's comment carry the tag ------------------

{
    my $ref = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'tag-wd-1', 'stripe', 'live1', 74801, 500, 'USD', "
        . "'ba_tag_1')", user => 'portal');
    my $digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$ref', 'ok')",
                           user => 'ops_alice');
    $sb->psql("SELECT mt5credit.withdrawal_approve('$ref', '$digest', 'ok')",
              user => 'ops_bob');
    my $wid = $sb->sql1("SELECT id FROM mt5credit.withdrawal "
                        . "WHERE reference = '$ref'");
    my $debit = $sb->sql1("SELECT id FROM mt5credit.mt5_credit "
                          . "WHERE withdrawal_id = $wid");
    ok($st->wait_status($debit, 'done', 15), 'a withdrawal debit is done');
    is(comments_of("wd:$wid"), "prod:wd:$wid", '... its deal says prod:wd:N');
    # (the login's deposits take it all: it goes back as a refund leg,
    # sql/043; t/16 has the tagged payout key)
    is($sb->sql1("SELECT i.idempotency_key || ' ' || i.debit_reference || ' ' "
                 . "|| i.deployment_tag FROM mt5credit.withdrawal_refund r, "
                 . "mt5credit.refund_item_of(r.id) i WHERE r.withdrawal_id = "
                 . $wid), "mt5credit-prod-refund-$wid-1 prod:wd:$wid prod",
       '... and its refund leg is sent under a tagged key, naming the tag');
}

is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

done_testing;
