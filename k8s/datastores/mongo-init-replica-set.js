// Initiates the replica set rs0 of the StatefulSet `mongo` once, and does nothing if it exists.
// Run by the Job mongo-init-replica-set: mongosh --nodb mongo-init-replica-set.js
// MEMBERS (env) is the StatefulSet's replica count: 3 in prod, 1 in dev.
// Adding members later is a manual rs.add('mongo-3.mongo-headless:27017') on the primary.
// With MONGO_TLS_DIR (prod): connects over TLS as a member (the members' x509 certificate), and
// once the set has a primary makes or updates a user per MONGODB_PASSWORD_<APP> variable (`api-gateway`
// for MONGODB_PASSWORD_API_GATEWAY), with readWrite on campaign_ops and nothing else.
const tlsDir = process.env.MONGO_TLS_DIR || '';
const tlsOptions = tlsDir
  ? '&tls=true&tlsCAFile=' + tlsDir + '/ca.crt&tlsCertificateKeyFile=' + tlsDir + '/tls-combined.pem&authMechanism=MONGODB-X509&authSource=$external'
  : '';
const count = Number(process.env.MEMBERS || '3');
const members = [];
for (let i = 0; i < count; i++) members.push({ _id: i, host: 'mongo-' + i + '.mongo-headless:27017' });

function connect(host) {
  return new Mongo('mongodb://' + host + '/?directConnection=true&serverSelectionTimeoutMS=5000' + tlsOptions).getDB('admin');
}

// replSetInitiate needs every member up: wait for each (pods start in parallel, DNS may lag).
for (const member of members) {
  for (let attempt = 1; ; attempt++) {
    try {
      connect(member.host).runCommand({ ping: 1 });
      break;
    } catch (error) {
      if (attempt >= 90) throw error;
      print('waiting for ' + member.host + ': ' + error.message);
      sleep(2000);
    }
  }
}

// mongosh throws a command's error; older shells return it. Handle both.
function run(admin, command) {
  try {
    return admin.runCommand(command);
  } catch (error) {
    return error;
  }
}

const admin = connect(members[0].host);
const status = run(admin, { replSetGetStatus: 1 });
if (status.ok === 1) {
  print('replica set rs0 already initiated (' + status.members.length + ' members): nothing to do');
} else if (status.codeName === 'NotYetInitialized' || status.code === 94) {
  const result = run(admin, { replSetInitiate: { _id: 'rs0', members: members } });
  // AlreadyInitialized (23): another run got there first.
  if (result.ok !== 1 && result.code !== 23) throw new Error('replSetInitiate failed: ' + (result.errmsg || result.message));
  print('replica set rs0 initiated: ' + members.map((m) => m.host).join(', '));
} else {
  throw new Error('replSetGetStatus failed: ' + (status.errmsg || status.message));
}

if (tlsDir) {
  const primary = new Mongo('mongodb://' + members.map((m) => m.host).join(',') + '/?replicaSet=rs0&serverSelectionTimeoutMS=120000' + tlsOptions).getDB(
    'admin',
  );
  for (const name of Object.keys(process.env).filter((key) => key.startsWith('MONGODB_PASSWORD_'))) {
    const user = name.slice('MONGODB_PASSWORD_'.length).toLowerCase().replace(/_/g, '-');
    const roles = [{ role: 'readWrite', db: 'campaign_ops' }];
    const exists = primary.getUser(user) !== null;
    if (exists) primary.updateUser(user, { pwd: process.env[name], roles: roles });
    else primary.createUser({ user: user, pwd: process.env[name], roles: roles });
    print((exists ? 'updated' : 'created') + ' user ' + user);
  }
}
