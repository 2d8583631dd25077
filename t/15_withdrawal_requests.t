#!/usr/bin/perl
#
# Withdrawal requests and their maker-checker approval
# (sql/016_withdrawals.sql), each person logged in as their own role.
# Impossible:
#   - the same request twice from a double click, or one key reused for
#     another amount
#   - a withdrawal from a login the client does not own
#   - the maker approving their own request, in the function or by any
#     write to the table, the owner's included
#   - a program (the worker's role) preparing or approving a request: one
#     person with a batch host's credentials would be both people
#   - an approval of a request changed after it was prepared, or other
#     than the one the approver saw
#   - an approved request changing afterwards
#   - an operator writing the table directly, or a request deleted
#   - a withdrawal in a currency its payout provider cannot pay reaching
#     its MT5 debit: refused when requested, and when approved if the
#     provider's list changed meanwhile (sql/035)

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->register_account('alice', 1501, 'USD');
$sb->register_account('bob', 1502, 'USD');

sub request {
    my ($key, $amount, %o) = @_;
    return $sb->psql("SELECT reference || ' ' || status FROM "
        . "mt5credit.withdrawal_request('" . ($o{client} || 'alice')
        . "', '$key', 'stripe', 'live1', " . ($o{login} || 1501)
        . ", $amount, 'USD', '" . ($o{dest} || 'ba_test_dest_1') . "')",
        user => 'portal', may_fail => 1, raw => 1);
}

sub as {
    my ($who, $sql) = @_;
    my $out = $sb->psql($sql, user => $who, may_fail => 1, raw => 1);
    chomp $out;
    return $out;
}

sub status {
    $sb->sql1("SELECT status FROM mt5credit.withdrawal WHERE reference = '$_[0]'")
}

# --- requests -----------------------------------------------------------

my ($wd) = request('withdraw-0001', 25000) =~ /^(wd_\d+) requested/;
ok($wd, 'a request is recorded, requested');
like(request('withdraw-0001', 25000), qr/^$wd requested/,
     'the same key again is the same request');
like(request('withdraw-0001', 26000), qr/different parameters/,
     'the same key with another amount is an error');
is($sb->sql1('SELECT count(*) FROM mt5credit.withdrawal'), 1,
   '... and one request in all');
like(request('withdraw-0002', 100, login => 1502), qr/does not own/,
     "a login of another client is refused");

# --- maker and checker ---------------------------------------------------

my $digest = as('ops_alice', "SELECT mt5credit.withdrawal_prepare('$wd', "
                . "'within limits')");
like($digest, qr/^[0-9a-f]{32}$/, 'alice prepares it (maker)');
like(as('ops_alice', "SELECT mt5credit.withdrawal_approve('$wd', "
        . "'$digest', 'ok')"), qr/maker-checker/,
     'alice cannot approve what she prepared');
like($sb->psql("UPDATE mt5credit.withdrawal SET status = 'approved', "
               . "approved_by = prepared_by, approved_at = now(), "
               . "approved_digest = prepared_digest WHERE reference = '$wd'",
               may_fail => 1), qr/withdrawal_four_eyes/,
     'even the owner cannot store an approval by the maker');
like(as('ops_bob', "UPDATE mt5credit.withdrawal SET status = 'approved' "
        . "WHERE reference = '$wd'"), qr/permission denied/,
     'an operator cannot write the table');

# the client amends it after it was prepared: the preparation is void
$sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$wd', 30000, "
          . "'ba_test_dest_1')", user => 'portal');
is(status($wd), 'requested', 'amended after preparation: back to requested');
like(as('ops_bob', "SELECT mt5credit.withdrawal_approve('$wd', '$digest', "
        . "'ok')"), qr/not prepared/,
     'bob cannot approve it as it was');

my $d2 = as('ops_alice', "SELECT mt5credit.withdrawal_prepare('$wd', NULL)");
like(as('ops_bob', "SELECT mt5credit.withdrawal_approve('$wd', '$digest', "
        . "'ok')"), qr/not the request that was prepared and shown/,
     'nor with the digest of the old request');
like($sb->psql("UPDATE mt5credit.withdrawal SET status = 'approved', "
               . "approved_by = 'ops_bob', approved_at = now(), "
               . "approved_digest = '$digest' WHERE reference = '$wd'",
               may_fail => 1), qr/withdrawal_approved_as_asked/,
     'even the owner cannot store an approval of another request');

is(as('ops_bob', "SELECT mt5credit.withdrawal_approve('$wd', '$d2', "
      . "'checked')"), '', 'bob approves the request he was shown');
is($sb->sql1("SELECT status || ' ' || prepared_by || ' ' || approved_by || "
             . "' ' || amount_minor FROM mt5credit.withdrawal "
             . "WHERE reference = '$wd'"),
   'approved ops_alice ops_bob 30000', '... approved, both people named');

like($sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$wd', 1, "
               . "'ba_other')", user => 'portal', may_fail => 1),
     qr/no open withdrawal/, 'an approved request cannot be amended');
like($sb->psql("UPDATE mt5credit.withdrawal SET amount_minor = 1 "
               . "WHERE reference = '$wd'", may_fail => 1),
     qr/what it asks cannot change/, '... not even by the owner');
like($sb->psql("DELETE FROM mt5credit.withdrawal", may_fail => 1),
     qr/append-only/, 'requests cannot be deleted');

# --- rejection, and no program as maker -----------------------------------

my ($wd2) = request('withdraw-0003', 5000) =~ /^(wd_\d+)/;
is(as('ops_bob', "SELECT mt5credit.withdrawal_reject('$wd2', "
      . "'destination unverified')"), '', 'a request can be rejected');
like(as('ops_alice', "SELECT mt5credit.withdrawal_prepare('$wd2', NULL)"),
     qr/not waiting to be prepared/, '... and is then final');

# a batch host's credentials must not be one of the two people (025)
my ($wd3) = request('withdraw-0004', 7000) =~ /^(wd_\d+)/;
like(as('worker', "SELECT mt5credit.withdrawal_prepare('$wd3', "
        . "'rules: under the daily limit')"), qr/permission denied/,
     'a program cannot prepare a withdrawal as maker');
my $d3 = as('ops_alice', "SELECT mt5credit.withdrawal_prepare('$wd3', NULL)");
like($d3, qr/^[0-9a-f]{32}$/, '... a person prepares it');
like(as('worker', "SELECT mt5credit.withdrawal_approve('$wd3', '$d3', "
        . "NULL)"), qr/permission denied/, '... and a program cannot approve');
is(as('ops_bob', "SELECT mt5credit.withdrawal_approve('$wd3', '$d3', "
      . "NULL)"), '', '... another person does');

# --- a currency the payout provider cannot pay -------------------------------

{
    my $before = $sb->sql1('SELECT count(*) FROM mt5credit.withdrawal');
    like($sb->psql("SELECT mt5credit.withdrawal_request('alice', "
                   . "'withdraw-jpy-1', 'stripe', 'live1', 1501, 5000, 'JPY', "
                   . "'ba_test_dest_1')", user => 'portal', may_fail => 1),
         qr/stripe cannot pay out JPY; refused before anything is debited/,
         'a withdrawal in a currency the provider cannot pay: refused');
    is($sb->sql1('SELECT count(*) FROM mt5credit.withdrawal'), $before,
       '... and nothing is recorded');

    my ($w) = request('withdraw-gbp-list', 4000) =~ /^(wd_\d+) requested/;
    my $d = as('ops_alice', "SELECT mt5credit.withdrawal_prepare('$w', 'ok')");
    like($d, qr/^[0-9a-f]{32}$/, 'a USD request, prepared');
    $sb->psql("DELETE FROM mt5credit.payout_currency WHERE provider = "
              . "'stripe' AND currency = 'USD'");
    like(as('ops_bob', "SELECT mt5credit.withdrawal_approve('$w', '$d', "
            . "'ok')"), qr/stripe cannot pay out USD/,
         'the provider stops paying USD: its approval is refused');
    is(status($w), 'prepared', '... it stays prepared');
    is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
                 . "mt5credit.withdrawal w ON w.id = c.withdrawal_id "
                 . "WHERE w.reference = '$w'"), 0, '... and nothing is debited');
    like(as('ops_bob', "DELETE FROM mt5credit.payout_currency"),
         qr/permission denied/, 'an operator cannot change the list');
    like($sb->psql("DELETE FROM mt5credit.payout_currency", user => 'worker',
                   may_fail => 1, raw => 1), qr/permission denied/,
         '... nor the worker');
    $sb->psql("INSERT INTO mt5credit.payout_currency VALUES ('stripe', 'USD')");
    is(as('ops_bob', "SELECT mt5credit.withdrawal_approve('$w', '$d', 'ok')"),
       '', 'listed again: approved');
}

done_testing;
