import { withUserInfo } from './eventstoredb-event-store';

describe("EventStoreDB's credentials in the connection string", () => {
  it('puts the user and password, escaped, before the hosts, replacing any there', () => {
    const credentials = { user: 'dispatch-service', password: 'p@ss:w/rd' };
    expect(withUserInfo('esdb+discover://eventstore:2113?tls=true', credentials)).toBe(
      'esdb+discover://dispatch-service:p%40ss%3Aw%2Frd@eventstore:2113?tls=true',
    );
    expect(withUserInfo('esdb://old:secret@a:2113,b:2113', credentials)).toBe('esdb://dispatch-service:p%40ss%3Aw%2Frd@a:2113,b:2113');
  });

  it('leaves the string alone without credentials, and refuses another scheme', () => {
    expect(withUserInfo('esdb://a:2113?tls=false', undefined)).toBe('esdb://a:2113?tls=false');
    expect(() => withUserInfo('http://a:2113', { user: 'u', password: 'p' })).toThrow(/esdb:\/\//);
  });
});
