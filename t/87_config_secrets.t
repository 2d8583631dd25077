#!/usr/bin/perl
#
# The batch programs' configuration and the secrets it names, as systemd
# hands them over (issue 31, item 5).  Reproduced before, on 29185f3: a
# key given twice and a value with an unterminated quote were taken
# without a word (the second value won; the quote became part of the
# value); password_file = %d/<name> with LoadCredential= failed with "No
# such file or directory" ($CREDENTIALS_DIRECTORY was never read); and
# `mt5credit status`, which never talks to MT5, refused to run without
# the MT5 password files.  This makes impossible:
#   - a duplicated key, a half-quoted value or a line longer than the
#     parser reads taken as anything: exit 2, file, line and why
#   - a *_file key's %d/<name> read from anywhere but systemd's
#     credentials directory, or silently when there is none
#   - a command reading secrets it does not use
#   - a secret others can read going unremarked (batch and edge)

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70871);

sub run_env {
    my ($env, @args) = @_;
    local @ENV{ keys %$env } = values %$env;
    return Mt5Credit::Worker::run($sb, @args);
}

my $db = '"host=127.0.0.1 port=' . $sb->pg_port
       . ' dbname=mt5credit user=worker"';

# ---- the parser -------------------------------------------------------------

my $conf = $sb->write_file('twice.conf', "database = $db\nlease = 60\n"
                           . "call_timeout = 10\nlease = 120\n");
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf);
is($rc, 2, 'a key given twice: exit 2');
like($out, qr/twice\.conf:4: lease is given twice in the main section/,
     '... naming the file, the line, the key');

$conf = $sb->write_file('twice-srv.conf', "database = $db\n"
    . "[server live1]\nurl = https://a.example\nmanager = 1\n"
    . "password_file = /x\nmanager = 2\n");
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf);
is($rc, 2, 'a key given twice in a server section: exit 2');
like($out, qr/twice-srv\.conf:6: manager is given twice in \[server live1\]/,
     '... naming the section');

$conf = $sb->write_file('two-srv.conf', "database = $db\n"
    . "[server live1]\nurl = https://a.example\nmanager = 1\n"
    . "password_file = /x\n[server live2]\nurl = https://b.example\n"
    . "manager = 1\npassword_file = /y\n");
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf);
is($rc, 0, 'the same key in two sections is two keys') or diag $out;

for my $bad ([ 'unterminated', "database = \"host=127.0.0.1 port=1\n", 1 ],
             [ 'a quote only at the end', "database = host=x\"\n", 1 ],
             [ 'a quote inside', "database = \"host=\"x\"\n", 1 ]) {
    my ($what, $text, $line) = @$bad;
    $conf = $sb->write_file('quote.conf', $text);
    ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf);
    is($rc, 2, "$what: exit 2");
    like($out, qr/quote\.conf:$line: database: a value is quoted whole/,
         "$what: says where and why");
}

$conf = $sb->write_file('long.conf', "database = $db\n"
                        . 'alert_url = https://x.example/' . ('a' x 3000)
                        . "\n");
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf);
is($rc, 2, 'a line longer than the parser reads: exit 2');
like($out, qr/long\.conf:2: a line longer than 2046 bytes/, '... saying so');

# ---- systemd's credentials ----------------------------------------------------

my $creds = $sb->dir . '/credentials';
mkdir $creds, 0700;
$sb->write_file("$creds/mt5-live1", $st->sim->password . "\n");
chmod 0400, "$creds/mt5-live1";
my $id = $st->pay(login => 70871, amount => 8700);
$conf = $st->worker_config('w87');
# the server section's key: Worker.pm writes password_file itself
my $text = do { local $/; open my $f, '<', $conf or die; <$f> };
$text =~ s/^password_file = .*$/password_file = %d\/mt5-live1/m;
$sb->write_file('w87.conf', $text);
$conf = $sb->dir . '/w87.conf';

($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($rc, 2, '%d/<name> without $CREDENTIALS_DIRECTORY: exit 2');
like($out, qr/password_file "%d\/mt5-live1": %d is systemd's credentials directory, and \$CREDENTIALS_DIRECTORY is not set/,
     '... saying why');
is($st->status_of($id), 'pending', '... nothing claimed');

($rc, $out) = run_env({ CREDENTIALS_DIRECTORY => $creds },
                      'work', '-c', $conf, '--once');
is($rc, 0, 'with $CREDENTIALS_DIRECTORY (LoadCredential=), the worker runs')
    or diag $out;
is($st->status_of($id), 'done', '... logs in to MT5 with the credential, '
   . 'and credits');

$conf = $sb->write_file('key.conf', "database = $db\n"
                        . "provider_api_key_file = %d/stripe-key\n");
($rc, $out) = Mt5Credit::Worker::run($sb, 'backfill', 'stripe', '-c', $conf);
is($rc, 2, 'every *_file key takes %d: provider_api_key_file too');
like($out, qr/provider_api_key_file "%d\/stripe-key": %d is systemd's/,
     '... saying why it cannot be read here');

# ---- only the secrets a command uses ----------------------------------------

$conf = $sb->write_file('status.conf', "database = $db\n"
    . "[server live1]\nurl = https://a.example\nmanager = 1\n"
    . "password_file = /nonexistent/mt5-live1\n");
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf);
is($rc, 0, 'status never reads the MT5 password it does not use')
    or diag $out;
unlike($out, qr/password_file/, '... nor mentions it');
($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($rc, 2, 'work, which talks to MT5, needs it');
like($out, qr/password_file \/nonexistent\/mt5-live1: No such file/,
     '... and says so');

# ---- secrets others can read ------------------------------------------------

chmod 0644, "$creds/mt5-live1";
($rc, $out) = run_env({ CREDENTIALS_DIRECTORY => $creds },
                      'work', '-c', $sb->dir . '/w87.conf', '--once');
like($out, qr/password_file \S+mt5-live1 is readable by others \(mode 644\); use 0600/,
     'a password file others can read: warned at start');

my $secret = $sb->write_file('edge-open.secret', "whsec_edge_open\n");
chmod 0644, $secret;
my $edge = $sb->nginx_conf(<<"HTTP");
    mt5_credit_postgres "host=127.0.0.1 port=5432 dbname=x";
    server {
        listen 127.0.0.1:%%PORT%%;
        location /hook {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secret;
        }
    }
HTTP
my ($ok, $nout) = $sb->nginx_test_config($edge);
ok($ok, 'the edge starts with a secret file others can read ...');
like($nout, qr/\[warn\].*mt5_credit_secret_file "\Q$secret\E" is readable by every user of this host \(mode 644\): chmod o-rwx/,
     '... and nginx -t says so');
chmod 0640, $secret;
($ok, $nout) = $sb->nginx_test_config($edge);
unlike($nout, qr/readable by every user/, '... and not once it is 0640');

done_testing;
