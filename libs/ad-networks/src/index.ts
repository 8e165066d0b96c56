export * from './ad-network.port';
export * from './ad-networks';
export * from './network-settings';
export * from './network-http';
export * from './budget-units';
export * from './account-time';
export * from './oauth2';
export * from './ad-networks.module';
