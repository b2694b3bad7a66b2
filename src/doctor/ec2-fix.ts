import type { Ec2Error } from "../eni/errors/ec2-error.js";

/** An Ec2Error's fix, by what went wrong; its message already names the action. */
export function ec2Fix(error: Ec2Error): string {
  if (error.code === "CredentialsProviderError") {
    return "give the pod an IRSA or EKS Pod Identity role, or let it use the node role through IMDS (hop limit 2)";
  }
  if (error.kind === "permission") return "grant the action it names to the pod's role";
  if (error.kind === "unavailable") {
    return "check that the pod reaches the EC2 endpoint (ec2.<region>.amazonaws.com or the VPC's EC2 endpoint; AWS_ENDPOINT_URL_EC2 if set)";
  }
  return "see EC2's message";
}
