#!/usr/bin/perl
# The account flow through OpenAPI::Client (Debian's libopenapi-client-perl), a client Perl builds
# at run time from the served /openapi.json and that checks each request against the contract
# before sending it: register, both logins, me, both refreshes, a profile update, an admin's
# create, update and list, a logout. Dies on the first unexpected answer; prints what the test
# checks against the database as JSON.
#
#   perl flow.pl BASE_URL ADMIN_EMAIL ADMIN_PASSWORD EMAIL PASSWORD NEW_EMAIL
use strict;
use warnings;
use utf8;
use MIME::Base64 qw(decode_base64url);
use Mojo::JSON qw(encode_json false);
use OpenAPI::Client;

my ($base, $admin_email, $admin_password, $email, $password, $new_email) = @ARGV;
die "usage: $0 BASE_URL ADMIN_EMAIL ADMIN_PASSWORD EMAIL PASSWORD NEW_EMAIL\n" unless defined $new_email;

my $client = OpenAPI::Client->new("$base/openapi.json", base_url => $base);
my $token;
$client->on(after_build_tx => sub {
  my (undef, $tx) = @_;
  $tx->req->headers->authorization("Bearer $token") if defined $token;
});

# The body of an answer with this status, or death with what came instead.
sub answer {
  my ($tx, $status, $what) = @_;
  my $code = $tx->res->code // 0;
  die "$what answered $code, not $status: @{[ $tx->res->body ]}\n" unless $code == $status;
  return $tx->res->json;
}

sub check {
  my ($condition, $what) = @_;
  die "$what\n" unless $condition;
}

sub claims {
  my ($jwt) = @_;
  my $payload = (split /\./, $jwt)[1];
  return Mojo::JSON::decode_json(decode_base64url($payload));
}

# A name with a "u" and letters beyond ASCII: the contract's Name pattern as Perl reads it.
my $name = 'Ursula Ünal-Øberg';
my $registered = answer($client->register({body => {email => $email, password => $password, name => $name}}), 201, 'register');
my $user = $registered->{data}{user};
check($user->{email} eq $email && $user->{name} eq $name, 'register: another user came back');
check($registered->{data}{token_type} eq 'bearer', 'register: no bearer token');

# A bidirectional override is refused by the client itself, before anything is sent.
my $local = $client->register({body => {email => "x$email", password => $password, name => "Eve\x{202E}gnp.exe"}});
check($local->res->code == 400 && !defined $local->res->headers->header('RateLimit-Limit'), 'a bidi override was not refused locally');
check((grep { $_->{path} eq '/body/name' } @{$local->res->json->{errors}}), 'the local refusal does not name body.name');

my $form = answer($client->login({}, form => {grant_type => 'password', username => $email, password => $password}), 200, 'form login');
check($form->{token_type} eq 'bearer' && $form->{access_token} eq $form->{data}{access_token}, 'form login: tokens not at both levels');
check(claims($form->{access_token})->{sub} eq $user->{id}, 'form login: token of another user');

my $json = answer($client->loginJson({body => {email => $email, password => $password}}), 200, 'JSON login')->{data};
check($json->{user}{id} == $user->{id}, 'JSON login: another user');

$token = $json->{access_token};
my $me = answer($client->getMe, 200, 'me')->{data};
check($me->{email} eq $email && $me->{name} eq $name, 'me: another user');

my $refreshed = answer($client->refreshToken({body => {refresh_token => $json->{refresh_token}}}), 200, 'refresh')->{data};
check($refreshed->{refresh_token} ne $json->{refresh_token}, 'refresh: the refresh token did not rotate');
my $by_form = answer($client->login({}, form => {grant_type => 'refresh_token', refresh_token => $form->{refresh_token}}), 200, 'form refresh');
check(claims($by_form->{refresh_token})->{sid} eq claims($form->{refresh_token})->{sid}, 'form refresh: another session');

$token = $refreshed->{access_token};
my $renamed = answer($client->updateUser({id => $user->{id}, body => {name => 'Ursula Perl'}}), 200, 'profile update')->{data};
check($renamed->{name} eq 'Ursula Perl', 'profile update: name unchanged');

$token = answer($client->loginJson({body => {email => $admin_email, password => $admin_password}}), 200, 'admin login')->{data}{access_token};
my $created = answer(
  $client->createUser({body => {email => $new_email, password => $password, name => 'Created By Perl', role => 'user'}}),
  201, 'create user')->{data};
check($created->{email} eq $new_email, 'create user: another e-mail');
my $updated = answer($client->updateUser({id => $created->{id}, body => {name => 'Renamed By Perl', is_active => false}}), 200, 'update user')->{data};
check($updated->{name} eq 'Renamed By Perl' && !$updated->{is_active}, 'update user: not updated');
my $list = answer($client->listUsers({page => 1, per_page => 100, sort => 'id', order => 'desc'}), 200, 'list users');
check($list->{meta}{page} == 1, 'list users: not the first page');
my ($listed) = grep { $_->{id} == $created->{id} } @{$list->{data}};
check($listed && $listed->{name} eq 'Renamed By Perl', 'list users: the updated user is not listed as updated');

$token = $refreshed->{access_token};
answer($client->logout({body => {all => false}}), 200, 'logout');
my $after = $client->getMe->res->code;

print encode_json({
  registered_id  => $user->{id},
  refreshed_sid  => claims($refreshed->{refresh_token})->{sid},
  created_id     => $created->{id},
  me_after_logout => 0 + $after,
}), "\n";
