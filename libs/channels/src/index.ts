export * from './channel-catalog';
export * from './channel-provider.port';
export * from './sandbox-simulator';
