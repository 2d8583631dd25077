#!/usr/bin/perl
#
# "200 only after COMMIT" means a durable COMMIT only with
# synchronous_commit on: with it off, a crash can lose an event already
# answered 200, or a deal a worker already recorded.  The edge and every
# batch program pin it for their own sessions.  Impossible:
#   - a role's or the database's synchronous_commit = off reaching the
#     edge's commits (the module's startup options pin it, and ingest()
#     pins it for its own transaction: t/38 has the options dropped)
#   - the same reaching a batch program's session (mt5credit cases, and
#     every other command: one connect function)
#   - a caller's own conninfo options lost by the pinning

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_headers);
use Mt5Credit::Worker;

my $secret = 'whsec_sync_commit_test';

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;

# the database and the roles say off; each session that writes records
# what it runs with (a trigger of the test's own, as the superuser)
$sb->psql(<<'SQL');
ALTER DATABASE mt5credit SET synchronous_commit = off;
ALTER ROLE edge SET synchronous_commit = off;
ALTER ROLE ops_alice SET synchronous_commit = off;
CREATE TABLE public.seen (tbl text, who text, setting text,
                          app_options text);
CREATE FUNCTION public.record_setting() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO public.seen
    VALUES (TG_TABLE_NAME, session_user,
            current_setting('synchronous_commit'),
            coalesce(current_setting('mt5test.mark', true), '-'));
    RETURN NULL;
END
$$;
CREATE TRIGGER record_setting AFTER INSERT ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION public.record_setting();
CREATE TRIGGER record_setting AFTER INSERT ON mt5credit.case_action
    FOR EACH ROW EXECUTE FUNCTION public.record_setting();
SQL

sub seen {
    my ($tbl) = @_;
    return $sb->sql1("SELECT who || ' ' || setting || ' ' || app_options "
                     . "FROM public.seen WHERE tbl = '$tbl' ORDER BY ctid "
                     . "DESC LIMIT 1") // '';
}

is($sb->sql1("SHOW synchronous_commit", user => 'ops_alice'), 'off',
   '(the control: a plain session of that role runs with it off)');

my $secrets = $sb->write_file('stripe.secret', "$secret\n");
$sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "%%PG%% options='-c mt5test.mark=edge'";
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
    }
HTTP

my $ev = stripe_event(type => 'customer.created');
my $res = $sb->http('POST', '/webhooks/stripe', body => $ev,
                    headers => stripe_headers($secret, $ev));
is($res->{status}, 200, 'a signed event is stored');
is(seen('webhook_event'), 'edge on edge',
   "the edge's session ran ingest() with synchronous_commit on, its "
   . 'role and database saying off, and its own options kept');

my $case = $sb->sql1("SELECT mt5credit.open_case('unusable_event', 'low', "
                     . "'sync-test', '{}')");
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'cases', '--database',
    'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit '
    . "user=ops_alice options='-c mt5test.mark=desk'", 'note',
    $case, '--note', 'looked at it');
is($rc, 0, 'a person notes the case through `mt5credit cases`') or diag $out;
is(seen('case_action'), 'ops_alice on desk',
   '... in a session with synchronous_commit on, and the options the '
   . 'conninfo gave kept');

done_testing();
