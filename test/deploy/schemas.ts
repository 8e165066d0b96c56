/** Kubernetes objects validated offline against their schemas: kubernetes-models, the prometheus-operator's for monitoring.coreos.com, cert-manager's for cert-manager.io. */

// Parsed YAML or JSON: the schema validation is what types it.
type Json = any;

/** The model class of an apiVersion and kind, e.g. apps/v1 Deployment or monitoring.coreos.com/v1 PrometheusRule. */
function modelFor(apiVersion: string, kind: string): (new (data: Json) => { validate(): void }) | null {
  try {
    // Core group `v1` lives in kubernetes-models/v1, the others in kubernetes-models/<group>/<version>.
    const module = apiVersion.startsWith('monitoring.coreos.com/')
      ? require(`@kubernetes-models/prometheus-operator/${apiVersion}`)
      : apiVersion.startsWith('cert-manager.io/')
        ? require(`@kubernetes-models/cert-manager/${apiVersion}`)
        : require(`kubernetes-models/${apiVersion}`);
    return module[kind] ?? null;
  } catch {
    return null;
  }
}

/** Why an object does not validate against its schema, in one line; null when it does. */
export function schemaErrors(object: Json): string | null {
  const Model = modelFor(object.apiVersion, object.kind);
  if (!Model) return `no Kubernetes schema for ${object.apiVersion} ${object.kind}`;
  try {
    new Model(object).validate();
    return null;
  } catch (error) {
    const details = (error as { errors?: Array<{ instancePath?: string; message?: string }> }).errors;
    return details?.length ? details.map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ') : (error as Error).message;
  }
}
